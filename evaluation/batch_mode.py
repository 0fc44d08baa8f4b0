"""Message Batches mode: half-price judging for large jobs, resumable across restarts.

Flow:

    pending episodes --chunks of run.batch_max_requests--> prepare and build K requests each
        --> submit a batch; record (batch id, custom_id -> episode, sample, fingerprint); free the images
    each batch --poll every run.batch_poll_interval_s until ended--> results by custom_id
        --> rebuild the same requests (plans are deterministic), validate, re-ask invalid ones
            synchronously, aggregate, record
    A restart first collects batches submitted earlier but never collected, instead of paying twice.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from functools import partial
from typing import Any

from evaluation.anthropic_client import AnthropicJudgeClient, call_with_retries, reply_from_message
from evaluation.episode_prep import build_request, custom_id, evidence_packs, prepare_episode, request_for
from evaluation.episode_source import EpisodeRecord
from evaluation.errors import EvaluationError, JudgeCallError
from evaluation.judge_client import JudgeReply
from evaluation.run_context import EpisodeOutcome, ProgressSink, RunContext, finish_episode, record_failure
from evaluation.sample_outcome import judge_sample

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Job:
    batch_id: str
    requests: dict[str, dict[str, Any]]  # custom_id -> {"episode", "sample", "fingerprint"}


def run_batches(
    ctx: RunContext, client: AnthropicJudgeClient, pending: list[tuple[EpisodeRecord, str]], progress: ProgressSink
) -> tuple[list[EpisodeOutcome], bool]:
    """Judge pending episodes through Message Batches; returns (outcomes, interrupted)."""
    todo = {ep.index: (ep, fp) for ep, fp in pending}
    jobs: list[_Job] = []
    for batch_id, requests in ctx.store.open_batch_jobs(ctx.config_hash):
        wanted = {
            r["episode"] for r in requests.values() if todo.get(r["episode"], (None, None))[1] == r["fingerprint"]
        }
        if wanted:
            log.info("collecting Message Batch %s submitted by an earlier run", batch_id)
            jobs.append(_Job(batch_id, requests))
        else:
            ctx.store.add_batch_event(batch_id, "abandoned")
    covered = {r["episode"] for job in jobs for r in job.requests.values()}
    fresh = [(ep, fp) for ep, fp in pending if ep.index not in covered]
    per_batch = max(1, ctx.config.run.batch_max_requests // ctx.config.judge.samples)
    outcomes: list[EpisodeOutcome] = []
    for start in range(0, len(fresh), per_batch):
        if ctx.stop.is_set():
            return outcomes, True
        job, failed = _submit(ctx, client, fresh[start : start + per_batch])
        outcomes += failed
        for o in failed:
            progress.advance(o)
        if job is not None:
            jobs.append(job)
    for job in jobs:
        ended = _wait(ctx, client, job.batch_id)
        if not ended:
            log.warning("Message Batch %s is still processing; run the same command again to collect it", job.batch_id)
            return outcomes, True
        for outcome in _collect(ctx, client, job, todo):
            outcomes.append(outcome)
            progress.advance(outcome)
        ctx.store.add_batch_event(job.batch_id, "collected")
    return outcomes, False


def _submit(
    ctx: RunContext, client: AnthropicJudgeClient, chunk: list[tuple[EpisodeRecord, str]]
) -> tuple[_Job | None, list[EpisodeOutcome]]:
    requests: list[dict[str, Any]] = []
    meta: dict[str, dict[str, Any]] = {}
    failed: list[EpisodeOutcome] = []
    for ep, fp in chunk:
        try:
            prepared = prepare_episode(ctx.source, ep, ctx.rubric, ctx.config, ctx.config.judge.samples)
            packs = evidence_packs(ctx.source, prepared, ctx.config.frames.jpeg_quality)
        except EvaluationError as e:
            failed.append(record_failure(ctx, ep, fp, f"{type(e).__name__}: {e}"))
            continue
        for pack in packs:
            _, request = build_request(ctx.rubric, prepared, pack, ctx.config)
            requests.append({"custom_id": request.custom_id, "params": request.params()})
            meta[request.custom_id] = {"episode": ep.index, "sample": pack.sample_index, "fingerprint": fp}
    if not requests:
        return None, failed
    batch, _, _ = call_with_retries(
        lambda: client.sdk.messages.batches.create(requests=requests), client.retry, "batch create"
    )
    ctx.store.record_batch_job(batch.id, ctx.run_id, ctx.config_hash, meta)
    log.info("submitted Message Batch %s with %d requests", batch.id, len(requests))
    return _Job(batch.id, meta), failed


def _wait(ctx: RunContext, client: AnthropicJudgeClient, batch_id: str) -> bool:
    """Poll until the batch ends (True), or until stopped or out of time (False)."""
    deadline = time.monotonic() + ctx.config.run.batch_max_wait_s
    while True:
        batch, _, _ = call_with_retries(
            lambda: client.sdk.messages.batches.retrieve(batch_id), client.retry, f"batch {batch_id}"
        )
        if batch.processing_status == "ended":
            return True
        if time.monotonic() >= deadline or ctx.stop.wait(ctx.config.run.batch_poll_interval_s):
            return False


def _collect(
    ctx: RunContext, client: AnthropicJudgeClient, job: _Job, todo: dict[int, tuple[EpisodeRecord, str]]
) -> list[EpisodeOutcome]:
    entries, _, _ = call_with_retries(
        lambda: list(client.sdk.messages.batches.results(job.batch_id)), client.retry, f"batch {job.batch_id} results"
    )
    results = {e.custom_id: e.result for e in entries}
    outcomes = []
    for index in sorted({r["episode"] for r in job.requests.values()}):
        if index not in todo:
            continue
        ep, fp = todo.pop(index)
        try:
            prepared = prepare_episode(ctx.source, ep, ctx.rubric, ctx.config, ctx.config.judge.samples)
            packs = evidence_packs(ctx.source, prepared, ctx.config.frames.jpeg_quality)
        except EvaluationError as e:
            outcomes.append(record_failure(ctx, ep, fp, f"{type(e).__name__}: {e}"))
            continue
        call_ctx = ctx.call_context(prepared, batch=True)
        samples = []
        for pack in packs:
            prompt, request = build_request(ctx.rubric, prepared, pack, ctx.config)
            first = _reply(results.get(request.custom_id), request.custom_id)
            make = partial(_request, prompt=prompt, ctx=ctx, episode=ep.index, sample=pack.sample_index)
            sample = judge_sample(client, prompt, request, pack, ctx.rubric, call_ctx, make, first, job.batch_id)
            for call in sample.calls:
                ctx.store.record_call(call)
            samples.append(sample)
        outcomes.append(finish_episode(ctx, prepared, samples))
    return outcomes


def _reply(result: Any, cid: str) -> JudgeReply | JudgeCallError:
    if result is None:
        return JudgeCallError("batch_missing", f"no result for {cid} in the batch")
    match result.type:
        case "succeeded":
            return reply_from_message(result.message, 1, (), 0.0)
        case "errored":
            inner = result.error.error
            return JudgeCallError("batch_errored", f"{inner.type}: {getattr(inner, 'message', '')}")
        case "expired":
            return JudgeCallError("batch_expired", "the batch expired before this request was processed")
        case _:
            return JudgeCallError("batch_canceled", "the request was canceled")


def _request(messages: list[dict], kind: str, *, prompt: Any, ctx: RunContext, episode: int, sample: int) -> Any:
    return request_for(prompt, messages, custom_id(episode, sample, kind), ctx.config)
