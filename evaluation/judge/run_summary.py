"""What a judge run did: episodes from their outcomes; calls, requests, tokens and cost from the store.

A judge call is one request and its retries, so a run can make 10 calls and send 51 requests. Both,
with tokens and cost, are summed over the call records of the run, which include the calls of
episodes the run left unfinished (interrupted or paused): they were sent, and paid for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evaluation.judge.run_context import EpisodeOutcome, RunContext

_CALL_TOTALS = """
SELECT COUNT(*) AS calls, COALESCE(SUM(attempts), 0) AS requests, COALESCE(SUM(cost_usd), 0.0) AS cost_usd,
  COALESCE(SUM(json_extract(usage_json, '$.input_tokens') + json_extract(usage_json, '$.cache_creation_input_tokens')
               + json_extract(usage_json, '$.cache_read_input_tokens')), 0) AS input_tokens,
  COALESCE(SUM(json_extract(usage_json, '$.output_tokens')), 0) AS output_tokens
FROM calls WHERE run_id = ?
"""


@dataclass(frozen=True)
class RunSummary:
    """What a run did."""

    run_id: str | None  # None when there was nothing to do (no run is recorded)
    config_hash: str  # judgment hash
    episodes: int  # episodes selected
    skipped: int  # already scored under this configuration
    scored: int  # scored in this run
    failed: int  # failed in this run
    routed: int  # scored and routed to review
    calls: int  # judge calls recorded in this run (each is one request and its retries)
    requests: int  # HTTP requests those calls sent, retries included
    cost_usd: float  # from reported usage, all calls of the run
    input_tokens: int  # all input tokens reported
    output_tokens: int  # output tokens reported
    interrupted: bool  # stopped before the end (Ctrl-C, a batch still processing, or paused)
    outcomes: tuple[EpisodeOutcome, ...]  # per episode, in completion order
    paused: str = ""  # why the run paused (the API is overloaded: the breaker opened); "" when it did not
    unfinished: tuple[int, ...] = ()  # selected episodes this run neither scored nor failed (the next run judges them)

    @property
    def retries(self) -> int:
        """Requests beyond the first of each call."""
        return self.requests - self.calls


def nothing_to_do(config_hash: str, skipped: int) -> RunSummary:
    """The summary when every selected episode is already scored (no run is recorded)."""
    return RunSummary(None, config_hash, skipped, skipped, 0, 0, 0, 0, 0, 0.0, 0, 0, False, ())


def summarize(
    ctx: RunContext,
    selected: Sequence[int],
    skipped: int,
    outcomes: Sequence[EpisodeOutcome],
    interrupted: bool,
    paused: str = "",
) -> RunSummary:
    """The summary of a recorded run; `selected` are the indices of the episodes it was to judge."""
    (totals,) = ctx.store.query(_CALL_TOTALS, (ctx.run_id,))
    done = {o.episode_index for o in outcomes}
    return RunSummary(
        run_id=ctx.run_id,
        config_hash=ctx.config_hash,
        episodes=len(selected) + skipped,
        skipped=skipped,
        scored=sum(o.status == "scored" for o in outcomes),
        failed=sum(o.status == "failed" for o in outcomes),
        routed=sum(o.routed for o in outcomes if o.status == "scored"),
        calls=totals["calls"],
        requests=totals["requests"],
        cost_usd=totals["cost_usd"],
        input_tokens=totals["input_tokens"],
        output_tokens=totals["output_tokens"],
        interrupted=interrupted or bool(paused),
        outcomes=tuple(outcomes),
        paused=paused,
        unfinished=tuple(i for i in selected if i not in done),
    )


def summary_detail(s: RunSummary) -> dict[str, object]:
    """The summary as the detail of the run's closing event."""
    detail: dict[str, object] = {
        "episodes": s.episodes,
        "skipped": s.skipped,
        "scored": s.scored,
        "failed": s.failed,
        "routed": s.routed,
        "calls": s.calls,
        "requests": s.requests,
        "cost_usd": round(s.cost_usd, 6),
        "input_tokens": s.input_tokens,
        "output_tokens": s.output_tokens,
    }
    if s.paused:
        detail.update(paused=s.paused, unfinished=list(s.unfinished))
    return detail
