"""Batch scoring of a dataset: skip what is done, judge the rest with bounded concurrency, record all.

Flow:

    episodes --fingerprint; skip (index, fingerprint) scored under the same judgment hash--> pending
    pending --thread pool (run.concurrency)--> per episode: prepare, K samples (retry, re-ask), aggregate
        --> store: each call as it happens; the episode result in one transaction --> progress sink
    Ctrl-C (stop event): workers stop between samples; unfinished episodes stay unscored (resumable)
"""

from __future__ import annotations

import importlib.metadata
import logging
import threading
import uuid
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from functools import partial

from evaluation.anthropic_client import AnthropicJudgeClient
from evaluation.batch_mode import run_batches
from evaluation.config import JudgeCommandConfig, config_to_dict, judgment_hash
from evaluation.cost import price_for
from evaluation.episode_prep import build_request, custom_id, evidence_packs, prepare_episode, request_for
from evaluation.episode_source import DatasetSource, EpisodeRecord
from evaluation.errors import EvaluationError, RunAbortedError
from evaluation.judge_client import JudgeClient, JudgeRequest
from evaluation.motion_check import HEURISTIC_VERSION
from evaluation.prompt import JudgePrompt, prompt_hash
from evaluation.rubric import Rubric
from evaluation.run_context import (
    EpisodeOutcome,
    NullProgress,
    ProgressSink,
    RunContext,
    StopRequestedError,
    finish_episode,
    finish_heuristic,
    record_failure,
)
from evaluation.sample_outcome import judge_sample
from evaluation.store import EvaluationStore, RunRecord

log = logging.getLogger(__name__)

ABORT_REASONS = frozenset({"auth", "spend_limit", "bad_request"})  # retrying or moving on cannot help


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
    calls: int  # API requests
    cost_usd: float  # from reported usage
    input_tokens: int  # all input tokens reported
    output_tokens: int  # output tokens reported
    interrupted: bool  # stopped before the end
    outcomes: tuple[EpisodeOutcome, ...]  # per episode, in completion order


def select_pending(
    source: DatasetSource, config: JudgeCommandConfig, store: EvaluationStore, config_hash: str
) -> tuple[list[tuple[EpisodeRecord, str]], int]:
    """Selected episodes not yet scored under `config_hash` (all of them with run.force), and the skip count."""
    wanted = config.dataset.episodes
    episodes = [source.episode(i) for i in wanted] if wanted else list(source.episodes)
    done = set() if config.run.force else store.scored_episodes(config_hash, source.dataset_id)
    pending, skipped = [], 0
    for ep in episodes:
        fingerprint = source.fingerprint(ep)
        if (ep.index, fingerprint) in done:
            skipped += 1
        else:
            pending.append((ep, fingerprint))
    return pending, skipped


def run_judge(
    source: DatasetSource,
    rubric: Rubric,
    config: JudgeCommandConfig,
    store: EvaluationStore,
    client: JudgeClient | None,
    progress: ProgressSink | None = None,
    stop: threading.Event | None = None,
) -> RunSummary:
    """Judge (or heuristically score) the pending episodes of a dataset and record everything.

    Args:
        source: The opened dataset.
        rubric: The rubric.
        config: The command configuration.
        store: The evaluation store.
        client: Judge client (None with scorer "heuristic").
        progress: Progress sink (default: none).
        stop: Set it to stop between samples (Ctrl-C); the summary then says interrupted.

    Raises:
        RunAbortedError: The API refused requests in a way retrying cannot fix (key, spend limit, parameters).
        JudgeCallError: A Message Batches call failed for good.
    """
    progress = progress or NullProgress()
    config_hash = judgment_hash(config, rubric)
    pending, skipped = select_pending(source, config, store, config_hash)
    progress.start(len(pending), skipped)
    if not pending:
        return RunSummary(None, config_hash, skipped, skipped, 0, 0, 0, 0, 0.0, 0, 0, False, ())
    heuristic = config.scorer == "heuristic"
    mode = "offline" if heuristic else ("batches" if config.run.use_message_batches else "sync")
    ctx = RunContext(
        source, rubric, config, store, config_hash, uuid.uuid4().hex,
        None if heuristic else price_for(config.judge.model, config.judge.input_usd_per_mtok,
                                         config.judge.output_usd_per_mtok),
        stop or threading.Event(),
    )  # fmt: skip
    store.start_run(_run_record(ctx, mode))
    outcomes: list[EpisodeOutcome] = []
    interrupted = False
    try:
        if heuristic:
            for ep, _ in pending:
                prepared = prepare_episode(source, ep, rubric, config, samples=1)
                outcomes.append(finish_heuristic(ctx, prepared))
                progress.advance(outcomes[-1])
        elif mode == "batches":
            if not isinstance(client, AnthropicJudgeClient):
                raise EvaluationError("run.use_message_batches needs the Anthropic judge client")
            outcomes, interrupted = run_batches(ctx, client, pending, progress)
        else:
            outcomes, interrupted = _run_sync(ctx, client, pending, progress)
    except BaseException as e:
        store.add_run_event(ctx.run_id, "failed", {"error": repr(e)})
        raise
    summary = _summary(ctx, len(pending) + skipped, skipped, outcomes, interrupted)
    store.add_run_event(ctx.run_id, "interrupted" if interrupted else "finished", _summary_detail(summary))
    return summary


def _run_sync(
    ctx: RunContext, client: JudgeClient | None, pending: list[tuple[EpisodeRecord, str]], progress: ProgressSink
) -> tuple[list[EpisodeOutcome], bool]:
    if client is None:
        raise EvaluationError("scorer 'llm' needs a judge client (internal wiring error)")
    outcomes: list[EpisodeOutcome] = []
    aborted: RunAbortedError | None = None
    pool = ThreadPoolExecutor(max_workers=ctx.config.run.concurrency, thread_name_prefix="judge")
    futures: set[Future[EpisodeOutcome]] = {pool.submit(judge_episode, ctx, client, ep, fp) for ep, fp in pending}
    try:
        while futures:
            try:
                done, futures = wait(futures, timeout=0.5, return_when=FIRST_COMPLETED)
            except KeyboardInterrupt:
                if ctx.stop.is_set():
                    raise  # a second Ctrl-C: leave without waiting for the calls in flight
                ctx.stop.set()
                log.warning("interrupted: finishing the calls in flight (Ctrl-C again to leave now)")
                continue
            for fut in done:
                try:
                    outcome = fut.result()
                except StopRequestedError:
                    continue
                except RunAbortedError as e:
                    aborted = aborted or e
                    ctx.stop.set()
                    continue
                outcomes.append(outcome)
                progress.advance(outcome)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    if aborted is not None:
        raise aborted
    return outcomes, ctx.stop.is_set()


def judge_episode(ctx: RunContext, client: JudgeClient, episode: EpisodeRecord, fingerprint: str) -> EpisodeOutcome:
    """Judge one episode: prepare, K samples (each retried and re-asked as needed), aggregate, record.

    Raises:
        StopRequestedError: The run is stopping; nothing is recorded for this episode's aggregate.
    """
    if ctx.stop.is_set():
        raise StopRequestedError
    config = ctx.config
    try:
        prepared = prepare_episode(ctx.source, episode, ctx.rubric, config, config.judge.samples)
        packs = evidence_packs(ctx.source, prepared, config.frames.jpeg_quality)
    except EvaluationError as e:
        log.error("episode %d cannot be judged: %s", episode.index, e)
        return record_failure(ctx, episode, fingerprint, f"{type(e).__name__}: {e}")
    call_ctx = ctx.call_context(prepared)
    samples = []
    for pack in packs:
        if ctx.stop.is_set():
            raise StopRequestedError
        prompt, request = build_request(ctx.rubric, prepared, pack, config)

        make = partial(_request, prompt=prompt, episode_index=episode.index, sample_index=pack.sample_index,
                       config=config)  # fmt: skip
        result = judge_sample(client, prompt, request, pack, ctx.rubric, call_ctx, make)
        for call in result.calls:
            ctx.store.record_call(call)
        if result.failure_reason in ABORT_REASONS:
            raise RunAbortedError(_abort_message(result.failure_reason, result.calls[-1].failure_detail or ""))
        samples.append(result)
    return finish_episode(ctx, prepared, samples)


def _abort_message(reason: str, detail: str) -> str:
    match reason:
        case "auth":
            return f"the API rejected the key ({detail}); check the key in judge.api_key_env (ANTHROPIC_API_KEY)"
        case "spend_limit":
            return f"the organisation's spend limit is reached ({detail}); raise it in the Console or wait"
        case _:
            return (
                f"the API rejected the request ({detail}); check judge.model, judge.effort and judge.max_tokens "
                "against the model's documentation, and try --dry-run to see the exact request"
            )


def _request(
    messages: list[dict], kind: str, *, prompt: JudgePrompt, episode_index: int, sample_index: int,
    config: JudgeCommandConfig,
) -> JudgeRequest:  # fmt: skip
    return request_for(prompt, messages, custom_id(episode_index, sample_index, kind), config)


def _run_record(ctx: RunContext, mode: str) -> RunRecord:
    config = ctx.config
    heuristic = config.scorer == "heuristic"
    return RunRecord(
        run_id=ctx.run_id,
        scorer=config.scorer,
        config_hash=ctx.config_hash,
        config=config_to_dict(config),
        model=f"heuristic:{HEURISTIC_VERSION}" if heuristic else config.judge.model,
        prompt_hash="" if heuristic else prompt_hash(ctx.rubric),
        rubric_version=ctx.rubric.version,
        rubric=ctx.rubric.to_dict(),
        dataset_id=ctx.source.dataset_id,
        dataset_root=str(ctx.source.root),
        dataset_revision=ctx.source.revision,
        tag=config.run.tag,
        mode=mode,
        forced=config.run.force,
        sdk_version="" if heuristic else importlib.metadata.version("anthropic"),
    )


def _summary(
    ctx: RunContext, episodes: int, skipped: int, outcomes: list[EpisodeOutcome], interrupted: bool
) -> RunSummary:
    return RunSummary(
        run_id=ctx.run_id,
        config_hash=ctx.config_hash,
        episodes=episodes,
        skipped=skipped,
        scored=sum(o.status == "scored" for o in outcomes),
        failed=sum(o.status == "failed" for o in outcomes),
        routed=sum(o.routed for o in outcomes if o.status == "scored"),
        calls=sum(o.calls for o in outcomes),
        cost_usd=sum(o.cost_usd for o in outcomes),
        input_tokens=sum(o.usage.total_input_tokens for o in outcomes),
        output_tokens=sum(o.usage.output_tokens for o in outcomes),
        interrupted=interrupted,
        outcomes=tuple(outcomes),
    )


def _summary_detail(s: RunSummary) -> dict[str, object]:
    return {
        "episodes": s.episodes, "skipped": s.skipped, "scored": s.scored, "failed": s.failed, "routed": s.routed,
        "calls": s.calls, "cost_usd": round(s.cost_usd, 6), "input_tokens": s.input_tokens,
        "output_tokens": s.output_tokens,
    }  # fmt: skip
