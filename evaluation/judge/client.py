"""The judge-client seam: a request, a reply, and the protocol an implementation satisfies.

`AnthropicJudgeClient` (anthropic_client.py) is the real implementation; tests drive it against a
loopback server. Refusals come back as replies (they are billed and recorded); transport and server
failures that outlive the retries raise `JudgeCallError` (reason `breaker_open` when the run paused
because the API is overloaded).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from evaluation.judge.cost import TokenUsage


@dataclass(frozen=True)
class JudgeRequest:
    """One Messages API request, built from a prompt and the model settings."""

    custom_id: str  # unique id of the call, e.g. "ep3-s1-first" (used as the batch custom_id)
    model: str  # model id, e.g. "claude-sonnet-5-5"
    max_tokens: int  # output budget including thinking, tokens
    effort: str  # output_config.effort ("low".."max"), or "" for the model default
    system: tuple[dict[str, Any], ...]  # system text blocks
    messages: tuple[dict[str, Any], ...]  # conversation, ending with a user turn
    schema: dict[str, Any]  # output JSON schema
    timeout_s: float | None = None  # request timeout, seconds; None uses the client's (judge.request_timeout_s)

    def params(self) -> dict[str, Any]:
        """Keyword arguments of `messages.create` (no sampling parameters: current models reject them; no timeout)."""
        output_config: dict[str, Any] = {"format": {"type": "json_schema", "schema": self.schema}}
        if self.effort:
            output_config["effort"] = self.effort
        return {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": list(self.system),
            "messages": list(self.messages),
            "output_config": output_config,
        }


@dataclass(frozen=True)
class JudgeReply:
    """A reply, with what it cost and how it was obtained."""

    request_id: str | None  # the API's request id (header request-id), for support and audit
    model: str  # model that answered (response.model)
    text: str  # concatenated text blocks
    stop_reason: str | None  # "end_turn", "max_tokens", "refusal", ...
    usage: TokenUsage  # as reported by the API
    raw_json: str  # the whole response body
    attempts: int = 1  # requests sent (1 + retries)
    retry_reasons: tuple[str, ...] = field(default_factory=tuple)  # reason of each retried failure
    latency_s: float = 0.0  # time of the successful request, seconds (monotonic)
    refusal_detail: str = ""  # category and explanation when stop_reason is "refusal"


class JudgeClient(Protocol):
    """Sends one judge request and returns its reply."""

    def complete(self, request: JudgeRequest) -> JudgeReply:
        """Send a request, retrying transient failures.

        Raises:
            JudgeCallError: The call failed for good (the reason says why).
        """
        ...
