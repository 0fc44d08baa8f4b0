"""`JudgeClient` on the `anthropic` SDK, with our own retry loop.

The SDK's own retries are switched off (`max_retries=0`) so every attempt is visible: each failure is
classified (rate limit, overload, server error, timeout, connection), logged and retried with
exponential backoff and jitter, honouring `retry-after`; a spend-limit 429, a bad request, a rejected
key (401) or a refused permission (403) is not retried. With an `OverloadBreaker`, every reply is
counted and no attempt starts once it is open (breaker.py).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anthropic

from evaluation.config_checks import reject_non_finite
from evaluation.errors import ConfigError, JudgeCallError
from evaluation.judge.breaker import BREAKER_OPEN, OverloadBreaker
from evaluation.judge.client import JudgeReply, JudgeRequest
from evaluation.judge.cost import TokenUsage

log = logging.getLogger(__name__)

RETRYABLE_REASONS = frozenset({"rate_limited", "overloaded", "server_error", "timeout", "connection"})
OVERLOAD_STATUSES = (529, 503)  # replies the breaker counts as overloaded (besides error type overloaded_error)


@dataclass(frozen=True)
class RetryPolicy:
    """How transient failures are retried."""

    max_attempts: int = 5  # requests per call including the first
    initial_backoff_s: float = 2.0  # wait before the first retry, seconds (doubles each retry)
    max_backoff_s: float = 60.0  # longest wait between attempts (also caps retry-after), seconds
    jitter: float = 0.25  # waits are shortened by up to this fraction at random

    def __post_init__(self) -> None:
        """Validate the fields."""
        reject_non_finite(self, "judge.retry")
        if self.max_attempts < 1:
            raise ConfigError(f"judge.max_attempts={self.max_attempts} must be >= 1")
        if self.initial_backoff_s < 0 or self.max_backoff_s < self.initial_backoff_s:
            raise ConfigError("judge.initial_backoff_s must be >= 0 and <= judge.max_backoff_s")
        if not 0 <= self.jitter < 1:
            raise ConfigError(f"judge.jitter={self.jitter}; allowed: 0 <= jitter < 1")

    def backoff_s(self, attempt: int, retry_after_s: float | None) -> float:
        """Wait before attempt `attempt + 1`, seconds."""
        if retry_after_s is not None and retry_after_s >= 0:
            return min(retry_after_s, self.max_backoff_s)
        base = min(self.initial_backoff_s * 2 ** (attempt - 1), self.max_backoff_s)
        return base * (1 - self.jitter * random.random())


def make_sdk_client(api_key: str, base_url: str | None, timeout_s: float) -> anthropic.Anthropic:
    """An SDK client with its own retries off (we retry, and log each attempt)."""
    return anthropic.Anthropic(api_key=api_key, base_url=base_url, timeout=timeout_s, max_retries=0)


def classify(error: Exception) -> tuple[str, str, float | None]:
    """(reason, detail, retry-after seconds) of an SDK error."""
    if isinstance(error, anthropic.APITimeoutError):
        return "timeout", "no response before the request timeout", None
    if isinstance(error, anthropic.APIConnectionError):
        return "connection", str(error), None
    if isinstance(error, anthropic.APIStatusError):
        status = error.status_code
        detail = f"HTTP {status}: {_error_message(error)}"
        retry_after = _retry_after_s(error.response)
        if status == 429:
            if error.error_code == "enforced_spend_limit_reached":
                return "spend_limit", detail, None
            return "rate_limited", detail, retry_after
        if status == 529 or error.type == "overloaded_error":
            return "overloaded", detail, retry_after
        if status in (408, 409) or status >= 500:
            return "server_error", detail, retry_after
        if status == 401:
            return "auth", detail, None
        if status == 403:  # the key is valid but may not use this model or feature
            return "permission", detail, None
        return "bad_request", detail, None
    return "other", f"{type(error).__name__}: {error}", None


def is_overload(error: Exception) -> bool:
    """Whether an SDK error is a reply saying the API is overloaded (what the breaker counts)."""
    return isinstance(error, anthropic.APIStatusError) and (
        error.status_code in OVERLOAD_STATUSES or error.type == "overloaded_error"
    )


def call_with_retries[T](
    fn: Callable[[], T],
    retry: RetryPolicy,
    label: str,
    sleep: Callable[[float], None] = time.sleep,
    breaker: OverloadBreaker | None = None,
) -> tuple[T, int, tuple[str, ...]]:
    """Call an SDK function, retrying transient failures; with a breaker, count replies and stop when it opens.

    Returns:
        The result, the number of attempts, and the reason of each retried failure.

    Raises:
        JudgeCallError: A non-retryable failure, the last retryable one, or (reason `breaker_open`) an
            attempt the open breaker refused; `attempts` counts the requests actually sent (0 when none was).
    """
    retries: list[str] = []
    request_id = None
    for attempt in range(1, retry.max_attempts + 1):
        if breaker is not None and breaker.is_open:  # the failure before (if any) is not retried: retries[:-1]
            raise JudgeCallError(BREAKER_OPEN, breaker.reason(), attempt - 1, request_id, tuple(retries[:-1]))
        try:
            result = fn()
        except anthropic.AnthropicError as e:
            reason, detail, retry_after = classify(e)
            request_id = getattr(e, "request_id", None)
            if breaker is not None and isinstance(e, anthropic.APIStatusError):
                breaker.record_reply(overloaded=is_overload(e))
                if breaker.is_open and reason in RETRYABLE_REASONS:  # this reply opened it (or another did)
                    raise JudgeCallError(BREAKER_OPEN, breaker.reason(), attempt, request_id, tuple(retries)) from e
            if reason not in RETRYABLE_REASONS or attempt == retry.max_attempts:
                raise JudgeCallError(reason, detail, attempt, request_id, tuple(retries)) from e
            wait = retry.backoff_s(attempt, retry_after)
            log.warning("%s: %s (attempt %d/%d); retrying in %.2f s", label, detail, attempt, retry.max_attempts, wait)
            retries.append(reason)
            sleep(wait)
            continue
        if breaker is not None:
            breaker.record_reply(overloaded=False)
        return result, attempt, tuple(retries)
    raise AssertionError("unreachable")  # the loop returns or raises


class AnthropicJudgeClient:
    """Judge client on the Messages API. Thread-safe (the SDK client is)."""

    def __init__(
        self,
        client: anthropic.Anthropic,
        retry: RetryPolicy,
        sleep: Callable[[float], None] = time.sleep,
        breaker: OverloadBreaker | None = None,
    ) -> None:
        """Wrap an SDK client (see `make_sdk_client`) with a retry policy and, optionally, the run's breaker."""
        self.sdk = client
        self.retry = retry
        self.breaker = breaker
        self._sleep = sleep

    def complete(self, request: JudgeRequest) -> JudgeReply:
        """Send a request; retry transient failures; return the reply (refusals included).

        Raises:
            JudgeCallError: A non-retryable failure, the last retryable one, or the breaker is open.
        """
        params = request.params()
        timeout = {} if request.timeout_s is None else {"timeout": request.timeout_s}
        timing: list[float] = []

        def send() -> anthropic.types.Message:
            timing.append(time.monotonic())
            return self.sdk.messages.create(**params, **timeout)

        message, attempts, retries = call_with_retries(send, self.retry, request.custom_id, self._sleep, self.breaker)
        return reply_from_message(message, attempts, retries, time.monotonic() - timing[-1])


def reply_from_message(
    message: anthropic.types.Message, attempts: int, retries: tuple[str, ...], latency_s: float
) -> JudgeReply:
    """A `JudgeReply` from an SDK message."""
    text = "".join(block.text for block in message.content if getattr(block, "type", "") == "text")
    refusal = ""
    if message.stop_reason == "refusal":
        details = message.stop_details
        category = getattr(details, "category", None) or "uncategorised"
        refusal = f"{category}: {getattr(details, 'explanation', None) or 'no explanation given'}"
    u = message.usage
    usage = TokenUsage(
        input_tokens=u.input_tokens,
        output_tokens=u.output_tokens,
        cache_creation_input_tokens=u.cache_creation_input_tokens or 0,
        cache_read_input_tokens=u.cache_read_input_tokens or 0,
    )
    return JudgeReply(
        request_id=getattr(message, "_request_id", None),
        model=message.model,
        text=text,
        stop_reason=message.stop_reason,
        usage=usage,
        raw_json=message.to_json(indent=None),
        attempts=attempts,
        retry_reasons=retries,
        latency_s=latency_s,
        refusal_detail=refusal,
    )


def _error_message(error: anthropic.APIStatusError) -> str:
    if error.api_message:
        return f"{error.type or 'error'}: {error.api_message}"
    return str(error.message)


def _retry_after_s(response: Any) -> float | None:
    """Seconds from `retry-after-ms` or `retry-after` (the SDK's httpx2 response), if present."""
    if response is None:
        return None
    for header, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        value = response.headers.get(header)
        if value is not None:
            try:
                return float(value) * scale
            except ValueError:
                continue
    return None
