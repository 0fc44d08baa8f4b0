"""What one judge run shares across episodes, and how an episode's result is recorded.

Used by the synchronous runner (run) and the Message Batches runner (batch_mode).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from evaluation.episode_score import EpisodeScore
from evaluation.episode_source import DatasetSource, EpisodeRecord
from evaluation.judge.aggregate import aggregate, heuristic_scores
from evaluation.judge.config import JudgeCommandConfig
from evaluation.judge.cost import Price, TokenUsage
from evaluation.judge.episode_prep import PreparedEpisode
from evaluation.judge.sample_outcome import CallContext, SampleResult
from evaluation.rubric import Rubric
from evaluation.store import EvaluationStore


class StopRequestedError(Exception):
    """Raised inside a worker when the run is stopping (Ctrl-C); the episode is left unscored."""


class OverloadPauseError(StopRequestedError):
    """Raised inside a worker when the breaker opened during its episode: the run pauses, the episode stays unscored.

    The message says why (how many overloaded replies in a row).
    """


@dataclass(frozen=True)
class EpisodeOutcome:
    """Result of one episode, for progress display and the run summary."""

    episode_index: int  # episode
    status: str  # "scored" or "failed"
    total: float | None  # sum of labels
    routed: bool  # needs a person
    reasons: tuple[str, ...]  # readable routing reasons
    calls: int  # API requests made
    cost_usd: float  # from reported usage
    usage: TokenUsage  # summed over the calls
    failure_reason: str | None = None  # why it failed
    scores: tuple[tuple[str, float | None], ...] = ()  # (criterion, label)
    heuristic: tuple[tuple[str, float | None], ...] = ()  # (criterion, motion heuristic score)
    did_nothing: bool = False  # the motion check saw no arm move and no gripper close


@dataclass
class RunContext:
    """Shared, read-mostly state of a run (the store is thread-safe)."""

    source: DatasetSource
    rubric: Rubric
    config: JudgeCommandConfig
    store: EvaluationStore
    config_hash: str  # judgment hash
    run_id: str  # this run
    price: Price | None  # model price, None if unknown
    stop: threading.Event = field(default_factory=threading.Event)  # set to stop between samples

    def call_context(self, prepared: PreparedEpisode, batch: bool = False) -> CallContext:
        """Fields shared by the call records of an episode."""
        return CallContext(self.run_id, prepared.episode.index, prepared.fingerprint, self.price, batch)


class ProgressSink(Protocol):
    """Receives progress (the command shows a rich progress bar)."""

    def start(self, total: int, skipped: int) -> None:
        """`total` episodes will be judged; `skipped` were already scored."""
        ...

    def advance(self, outcome: EpisodeOutcome) -> None:
        """One episode finished (scored or failed)."""
        ...


class NullProgress:
    """A progress sink that shows nothing."""

    def start(self, total: int, skipped: int) -> None:
        """Ignore."""

    def advance(self, outcome: EpisodeOutcome) -> None:
        """Ignore."""


def finish_episode(ctx: RunContext, prepared: PreparedEpisode, samples: Sequence[SampleResult]) -> EpisodeOutcome:
    """Aggregate the samples of an episode and append the result (one transaction)."""
    result = aggregate([s.verdict for s in samples], ctx.rubric, prepared.motion, ctx.config.routing)
    failures = Counter(s.failure_reason for s in samples if s.failure_reason)
    failure = failures.most_common(1)[0][0] if result.status == "failed" and failures else None
    calls = sum(len(s.calls) for s in samples)
    cost = sum(s.cost_usd for s in samples)
    usage = TokenUsage(
        input_tokens=sum(s.usage.input_tokens for s in samples),
        output_tokens=sum(s.usage.output_tokens for s in samples),
        cache_creation_input_tokens=sum(s.usage.cache_creation_input_tokens for s in samples),
        cache_read_input_tokens=sum(s.usage.cache_read_input_tokens for s in samples),
    )
    return _record(
        ctx,
        prepared.episode,
        prepared.fingerprint,
        result,
        prepared.motion.to_dict(),
        calls,
        cost if ctx.price else None,
        failure,
        usage,
    )


def finish_heuristic(ctx: RunContext, prepared: PreparedEpisode) -> EpisodeOutcome:
    """Record the offline heuristic scores of an episode (source "heuristic")."""
    result = heuristic_scores(ctx.rubric, prepared.motion)
    return _record(
        ctx, prepared.episode, prepared.fingerprint, result, prepared.motion.to_dict(), 0, 0.0, None, TokenUsage()
    )


def record_failure(ctx: RunContext, episode: EpisodeRecord, fingerprint: str, reason: str) -> EpisodeOutcome:
    """Record an episode that could not be judged at all (e.g. a video that does not decode)."""
    result = EpisodeScore(criteria=(), status="failed", reasons=())
    return _record(ctx, episode, fingerprint, result, {}, 0, None, reason, TokenUsage())


def _record(
    ctx: RunContext,
    episode: EpisodeRecord,
    fingerprint: str,
    result: EpisodeScore,
    motion: dict,
    calls: int,
    cost: float | None,
    failure: str | None,
    usage: TokenUsage,
) -> EpisodeOutcome:
    ctx.store.record_episode(
        ctx.run_id,
        ctx.config_hash,
        ctx.source.dataset_id,
        episode.index,
        fingerprint,
        result,
        motion,
        calls,
        cost,
        failure,
    )
    return EpisodeOutcome(
        episode_index=episode.index,
        status=result.status,
        total=result.total,
        routed=result.routed,
        reasons=tuple(f"{r.criterion + ': ' if r.criterion else ''}{r.detail}" for r in result.reasons),
        calls=calls,
        cost_usd=cost or 0.0,
        usage=usage,
        failure_reason=failure,
        scores=tuple((c.criterion, c.score) for c in result.criteria),
        heuristic=tuple((c.criterion, c.heuristic_score) for c in result.criteria),
        did_nothing=bool(motion.get("did_nothing", False)),
    )
