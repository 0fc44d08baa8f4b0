"""One sample's view of its calls: whether the last reply was cut off, for the budget of its re-ask.

`judge_sample` builds a re-ask through a callback that sees only the messages, not why the reply
before it was unusable. `SampleWatch` wraps the judge client for one sample and remembers the last
reply's stop reason, so the callback can give a re-ask after a `max_tokens` stop a larger budget:

    judge_sample --complete--> SampleWatch --complete--> JudgeClient
                               remembers: the last reply's stop reason
"""

from __future__ import annotations

from dataclasses import replace

from evaluation.errors import JudgeCallError
from evaluation.judge.client import JudgeClient, JudgeReply, JudgeRequest
from evaluation.judge.config import JudgeModelConfig


class SampleWatch:
    """A judge client for one sample that remembers its last reply's stop reason. Not shared between threads."""

    def __init__(self, client: JudgeClient, first: JudgeReply | JudgeCallError | None = None) -> None:
        """Wrap the run's client for one sample; `first` is a reply obtained elsewhere (a Message Batch's)."""
        self._client = client
        self._last_stop_reason = first.stop_reason if isinstance(first, JudgeReply) else None

    def complete(self, request: JudgeRequest) -> JudgeReply:
        """Send through the wrapped client, noting the reply's stop reason."""
        self._last_stop_reason = None
        reply = self._client.complete(request)
        self._last_stop_reason = reply.stop_reason
        return reply

    @property
    def cut_off(self) -> bool:
        """Whether the last reply stopped at max_tokens."""
        return self._last_stop_reason == "max_tokens"


def with_grown_budget(request: JudgeRequest, judge: JudgeModelConfig) -> JudgeRequest:
    """The request with twice `judge.max_tokens`, at most `judge.reask_max_tokens_cap` (a re-ask after a cut-off).

    The request timeout grows by the same factor: a longer reply takes longer to generate.
    """
    max_tokens = min(2 * judge.max_tokens, judge.reask_max_tokens_cap)
    return replace(request, max_tokens=max_tokens, timeout_s=judge.request_timeout_s * max_tokens / judge.max_tokens)
