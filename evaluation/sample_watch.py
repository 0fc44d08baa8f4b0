"""One sample's view of its calls: the budget of a re-ask after a cut-off reply, and lost retry reasons.

`judge_sample` builds the re-ask through a callback that sees only the messages, and records a
failed call from the error without its retry reasons. `SampleWatch` wraps the judge client for
one sample and keeps both facts, so the runner can give the re-ask a larger budget and complete
the call records:

    judge_sample --complete--> SampleWatch --complete--> JudgeClient
                               remembers: the last reply's stop reason, each failed call's retry reasons
"""

from __future__ import annotations

from dataclasses import replace

from evaluation.anthropic_client import RetriedCallError
from evaluation.config import JudgeModelConfig
from evaluation.errors import JudgeCallError
from evaluation.judge_client import JudgeClient, JudgeReply, JudgeRequest
from evaluation.store import CallRecord


class SampleWatch:
    """A judge client for one sample that remembers what its caller cannot see. Not shared between threads."""

    def __init__(self, client: JudgeClient) -> None:
        """Wrap the run's client for one sample."""
        self._client = client
        self._last_stop_reason: str | None = None
        self._retry_reasons: dict[str, tuple[str, ...]] = {}

    def complete(self, request: JudgeRequest) -> JudgeReply:
        """Send through the wrapped client, noting the stop reason or the failed call's retry reasons."""
        try:
            reply = self._client.complete(request)
        except JudgeCallError as e:
            self._last_stop_reason = None
            self._retry_reasons[request.custom_id] = e.retry_reasons if isinstance(e, RetriedCallError) else ()
            raise
        self._last_stop_reason = reply.stop_reason
        return reply

    @property
    def cut_off(self) -> bool:
        """Whether the last reply stopped at max_tokens."""
        return self._last_stop_reason == "max_tokens"

    def completed(self, call: CallRecord) -> CallRecord:
        """The record with the retry reasons of its failed call, when the record lacks them."""
        reasons = self._retry_reasons.get(call.custom_id, ())
        if call.status != "failed" or call.retry_reasons or not reasons:
            return call
        return replace(call, retry_reasons=reasons)


def with_grown_budget(request: JudgeRequest, judge: JudgeModelConfig) -> JudgeRequest:
    """The request with twice `judge.max_tokens`, at most `judge.reask_max_tokens_cap` (a re-ask after a cut-off).

    The request timeout grows by the same factor: a longer reply takes longer to generate.
    """
    max_tokens = min(2 * judge.max_tokens, judge.reask_max_tokens_cap)
    return replace(request, max_tokens=max_tokens, timeout_s=judge.request_timeout_s * max_tokens / judge.max_tokens)
