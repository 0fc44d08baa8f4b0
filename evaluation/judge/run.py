"""Batch scoring of a dataset: skip what is done, judge the rest with bounded concurrency, record all.

Flow:

    episodes --fingerprint; skip (index, fingerprint) scored under the same judgment hash--> pending
    pending --thread pool (run.concurrency)--> per episode: prepare, K samples (retry, re-ask), aggregate
        --> store: each call as it happens; the episode result in one transaction --> progress sink
    Ctrl-C (stop event): workers stop between samples; unfinished episodes stay unscored (resumable)
    breaker open (the API overloaded, see breaker.py): the same, and the summary says the run paused
"""

from __future__ import annotations

import importlib.metadata
import logging
import threading
import uuid
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from functools import partial

from evaluation.episode_source import DatasetSource, EpisodeRecord
from evaluation.errors import EvaluationError, RunAbortedError
from evaluation.judge.anthropic_client import AnthropicJudgeClient
from evaluation.judge.batch_mode import run_batches
from evaluation.judge.breaker import BREAKER_OPEN
from evaluation.judge.client import JudgeClient, JudgeRequest
from evaluation.judge.config import JudgeCommandConfig, config_to_dict, judgment_hash
from evaluation.judge.cost import price_for
from evaluation.judge.episode_prep import build_request, custom_id, evidence_packs, prepare_episode, request_for
from evaluation.judge.motion_check import HEURISTIC_VERSION
from evaluation.judge.prompt import JudgePrompt, prompt_hash
from evaluation.judge.run_context import (
    EpisodeOutcome,
    NullProgress,
    OverloadPauseError,
    ProgressSink,
    RunContext,
    StopRequestedError,
    finish_episode,
    finish_heuristic,
    record_failure,
)
from evaluation.judge.run_summary import RunSummary, nothing_to_do, summarize, summary_detail
from evaluation.judge.sample_outcome import judge_sample
from evaluation.judge.sample_watch import SampleWatch, with_grown_budget
from evaluation.rubric import Rubric
from evaluation.store import EvaluationStore, RunRecord

log = logging.getLogger(__name__)

ABORT_REASONS = frozenset({"auth", "permission", "spend_limit", "bad_request"})  # retrying or moving on cannot help


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

    The summary says `paused` when the client's breaker opened (the API overloaded); the run is resumable.

    Raises:
        RunAbortedError: The API refused requests in a way retrying cannot fix (key, spend limit, parameters).
        JudgeCallError: A Message Batches call failed for good.
    """
    progress = progress or NullProgress()
    config_hash = judgment_hash(config, rubric)
    pending, skipped = select_pending(source, config, store, config_hash)
    progress.start(len(pending), skipped)
    if not pending:
        return nothing_to_do(config_hash, skipped)
    heuristic = config.scorer == "heuristic"
    mode = "offline" if heuristic else ("batches" if config.run.use_message_batches else "sync")
    ctx = RunContext(
        source,
        rubric,
        config,
        store,
        config_hash,
        uuid.uuid4().hex,
        None
        if heuristic
        else price_for(config.judge.model, config.judge.input_usd_per_mtok, config.judge.output_usd_per_mtok),
        stop or threading.Event(),
    )
    store.start_run(_run_record(ctx, mode))
    outcomes: list[EpisodeOutcome] = []
    interrupted, paused = False, ""
    try:
        if heuristic:
            for ep, _ in pending:
                prepared = prepare_episode(source, ep, rubric, config, samples=1)
                outcomes.append(finish_heuristic(ctx, prepared))
                progress.advance(outcomes[-1])
        elif mode == "batches":
            if not isinstance(client, AnthropicJudgeClient):
                raise EvaluationError("run.use_message_batches needs the Anthropic judge client")
            outcomes, interrupted, paused = run_batches(ctx, client, pending, progress)
        else:
            outcomes, interrupted, paused = _run_sync(ctx, client, pending, progress)
    except BaseException as e:
        store.add_run_event(ctx.run_id, "failed", {"error": repr(e)})
        raise
    summary = summarize(ctx, [ep.index for ep, _ in pending], skipped, outcomes, interrupted, paused)
    event = "paused" if paused else ("interrupted" if interrupted else "finished")
    store.add_run_event(ctx.run_id, event, summary_detail(summary))
    return summary


def _run_sync(
    ctx: RunContext, client: JudgeClient | None, pending: list[tuple[EpisodeRecord, str]], progress: ProgressSink
) -> tuple[list[EpisodeOutcome], bool, str]:
    """Judge on a thread pool; returns (outcomes, interrupted, why the run paused or "")."""
    if client is None:
        raise EvaluationError("scorer 'llm' needs a judge client (internal wiring error)")
    outcomes: list[EpisodeOutcome] = []
    aborted: RunAbortedError | None = None
    paused = ""
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
                except OverloadPauseError as e:
                    paused = paused or str(e)
                    ctx.stop.set()  # episodes not yet started stay unscored; calls in flight finish
                    continue
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
    return outcomes, ctx.stop.is_set(), paused


def judge_episode(ctx: RunContext, client: JudgeClient, episode: EpisodeRecord, fingerprint: str) -> EpisodeOutcome:
    """Judge one episode: prepare, K samples (each retried and re-asked as needed), aggregate, record.

    Raises:
        StopRequestedError: The run is stopping; nothing is recorded for this episode's aggregate.
        OverloadPauseError: The breaker opened during a sample (the calls made are recorded).
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
        watch = SampleWatch(client)
        make = partial(
            _request,
            prompt=prompt,
            episode_index=episode.index,
            sample_index=pack.sample_index,
            config=config,
            watch=watch,
        )
        result = judge_sample(watch, prompt, request, pack, ctx.rubric, call_ctx, make)
        for call in result.calls:
            if call.attempts:  # a call the open breaker stopped before sending anything is not a call
                ctx.store.record_call(call)
        stopped = next((c for c in result.calls if c.failure_reason == BREAKER_OPEN), None)
        if stopped is not None:
            raise OverloadPauseError(stopped.failure_detail or BREAKER_OPEN)
        if result.failure_reason in ABORT_REASONS:
            detail = result.calls[-1].failure_detail or ""
            raise RunAbortedError(_abort_message(result.failure_reason, detail, config))
        samples.append(result)
    return finish_episode(ctx, prepared, samples)


def _abort_message(reason: str, detail: str, config: JudgeCommandConfig) -> str:
    match reason:
        case "auth":
            return f"the API rejected the key ({detail}); check the key in ${config.judge.api_key_env}"
        case "permission":
            return (
                f"the API accepted the key but refused this request ({detail}): the key lacks access to "
                f"judge.model={config.judge.model!r} or to a feature the request uses; check the model name "
                "(--judge.model=...) and the workspace's model access in the Anthropic Console"
            )
        case "spend_limit":
            return f"the organisation's spend limit is reached ({detail}); raise it in the Console or wait"
        case _:
            return (
                f"the API rejected the request ({detail}); check judge.model, judge.effort and judge.max_tokens "
                "against the model's documentation, and try --dry_run=true to see the exact request"
            )


def _request(
    messages: list[dict],
    kind: str,
    *,
    prompt: JudgePrompt,
    episode_index: int,
    sample_index: int,
    config: JudgeCommandConfig,
    watch: SampleWatch,
) -> JudgeRequest:
    """A request of a sample (`kind` "reask" after an unusable reply); a re-ask after a cut-off gets a grown budget."""
    request = request_for(prompt, messages, custom_id(episode_index, sample_index, kind), config)
    return with_grown_budget(request, config.judge) if kind == "reask" and watch.cut_off else request


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
