"""Message Batches mode: half-price judging for large jobs, resumable across restarts.

Flow:

    creates of earlier runs with no known outcome --list batches--> adopted or not_found (batch_submit)
    open jobs of THIS dataset and configuration --per episode, by the fingerprint it was submitted with-->
        same fingerprint: collect (no new request) | changed: "superseded", its result ignored, the episode
        submitted again | not selected by this run: the job stays open for the run that selects it
    pending episodes not covered --chunks of run.batch_max_requests--> prepare, build K requests each
        --> create the batch at most once (batch_submit); record custom_id -> episode, sample, fingerprint
    each job --poll every run.batch_poll_interval_s until ended--> results by custom_id
        --> rebuild the same requests (plans are deterministic), validate, re-ask invalid ones
            synchronously, aggregate, record
        expired, canceled or missing items --> one follow-up batch ("resubmitted"); its episodes take
            their other samples from the first batch ("siblings"); a second expiry fails the sample

Jobs are scoped by dataset id and judgment hash (which covers the rubric version), so one store can
serve several datasets: a run never abandons, collects or resubmits another dataset's batch. A job
is "abandoned" only when none of its episodes is still wanted and it was made from this folder.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass
from functools import partial
from typing import Any

from evaluation.episode_source import EpisodeRecord
from evaluation.errors import EvaluationError, JudgeCallError
from evaluation.judge.anthropic_client import AnthropicJudgeClient, call_with_retries, reply_from_message
from evaluation.judge.batch_submit import reconcile_orphans, submit_batch
from evaluation.judge.breaker import BREAKER_OPEN
from evaluation.judge.client import JudgeReply, JudgeRequest
from evaluation.judge.episode_prep import build_request, custom_id, evidence_packs, prepare_episode, request_for
from evaluation.judge.run_context import (
    EpisodeOutcome,
    OverloadPauseError,
    ProgressSink,
    RunContext,
    finish_episode,
    record_failure,
)
from evaluation.judge.sample_outcome import failed_call, judge_sample
from evaluation.judge.sample_watch import SampleWatch, with_grown_budget

log = logging.getLogger(__name__)

ITEM_ATTEMPTS = 2  # an expired, canceled or missing batch item is submitted once more, then fails
RESUBMITTED_REASONS = frozenset({"batch_expired", "batch_canceled", "batch_missing"})  # never processed: not billed


@dataclass(frozen=True)
class _Job:
    batch_id: str
    requests: dict[str, dict[str, Any]]  # custom_id -> {"episode", "sample", "fingerprint"[, "attempt", "siblings"]}
    episodes: frozenset[int]  # the episodes this run takes from it
    keep_open: bool = False  # it also holds episodes this run did not select


@dataclass(frozen=True)
class _Source:
    batch_id: str  # batch holding a sample's result
    custom_id: str  # the sample's custom_id in that batch
    may_resubmit: bool  # an expired, canceled or missing result is submitted again


def run_batches(
    ctx: RunContext, client: AnthropicJudgeClient, pending: list[tuple[EpisodeRecord, str]], progress: ProgressSink
) -> tuple[list[EpisodeOutcome], bool, str]:
    """Judge pending episodes through Message Batches; returns (outcomes, interrupted, why the run paused or "").

    The overload breaker opening during a re-ask pauses the run: the job stays open, and the next
    run collects the episodes this one did not finish from the same batch results.
    """
    todo = {ep.index: (ep, fp) for ep, fp in pending}
    reconcile_orphans(ctx, client)
    jobs = _claim_open_jobs(ctx, todo)
    covered = {e for job in jobs for e in job.episodes}
    fresh = [(ep, fp) for ep, fp in pending if ep.index not in covered]
    per_batch = max(1, ctx.config.run.batch_max_requests // ctx.config.judge.samples)
    outcomes: list[EpisodeOutcome] = []
    for start in range(0, len(fresh), per_batch):
        if ctx.stop.is_set():
            return outcomes, True, ""
        job, failed = _submit(ctx, client, fresh[start : start + per_batch])
        outcomes += failed
        for o in failed:
            progress.advance(o)
        if job is not None:
            jobs.append(job)
    queue = deque(jobs)
    while queue:
        job = queue.popleft()
        if not _wait(ctx, client, job.batch_id):
            log.warning("Message Batch %s is still processing; run the same command again to collect it", job.batch_id)
            return outcomes, True, ""
        collected: list[EpisodeOutcome] = []
        try:
            follow_up = _collect(ctx, client, job, todo, collected)
        except OverloadPauseError as e:
            outcomes += collected
            for outcome in collected:
                progress.advance(outcome)
            return outcomes, True, str(e)
        for outcome in collected:
            outcomes.append(outcome)
            progress.advance(outcome)
        if follow_up is not None:
            queue.append(follow_up)
        if job.keep_open:
            log.info("Message Batch %s stays open for episodes this run did not select", job.batch_id)
        else:
            ctx.store.add_batch_event(job.batch_id, "collected")
    return outcomes, False, ""


def _claim_open_jobs(ctx: RunContext, todo: dict[int, tuple[EpisodeRecord, str]]) -> list[_Job]:
    """What this run takes from each open job of its dataset and configuration (oldest first)."""
    selected = set(ctx.config.dataset.episodes) if ctx.config.dataset.episodes else None
    claimed: set[int] = set()
    jobs: list[_Job] = []
    # Newest first: a follow-up batch, not the batch it resubmitted from, owns the episodes it holds.
    for job in reversed(ctx.store.open_batch_jobs(ctx.config_hash, ctx.source.dataset_id)):
        submitted = {r["episode"]: r["fingerprint"] for r in job.requests.values()}
        wanted = frozenset(e for e, fp in submitted.items() if e not in claimed and e in todo and todo[e][1] == fp)
        stale = sorted(e for e, fp in submitted.items() if e in todo and todo[e][1] != fp)
        unselected = selected is not None and any(e not in selected for e in submitted)
        for e in stale:
            log.info("episode %d changed since Message Batch %s was submitted; judging it again", e, job.batch_id)
            ctx.store.add_batch_event(
                job.batch_id,
                "superseded",
                {
                    "episode": e,
                    "submitted_fingerprint": submitted[e],
                    "current_fingerprint": todo[e][1],
                },
            )
        claimed |= wanted
        if wanted:
            log.info("collecting Message Batch %s submitted by an earlier run", job.batch_id)
            jobs.append(_Job(job.batch_id, job.requests, wanted, keep_open=unselected))
        elif unselected or job.dataset_root != str(ctx.source.root):
            log.info("leaving Message Batch %s open: it holds episodes this run does not judge", job.batch_id)
        else:
            ctx.store.add_batch_event(job.batch_id, "abandoned", {"superseded": stale})
    return jobs[::-1]


def _submit(
    ctx: RunContext, client: AnthropicJudgeClient, chunk: list[tuple[EpisodeRecord, str]]
) -> tuple[_Job | None, list[EpisodeOutcome]]:
    entries: list[tuple[JudgeRequest, dict[str, Any]]] = []
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
            entries.append((request, {"episode": ep.index, "sample": pack.sample_index, "fingerprint": fp}))
    if not entries:
        return None, failed
    batch_id, meta = submit_batch(ctx, client, entries)
    return _Job(batch_id, meta, frozenset(e["episode"] for e in meta.values())), failed


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
    ctx: RunContext,
    client: AnthropicJudgeClient,
    job: _Job,
    todo: dict[int, tuple[EpisodeRecord, str]],
    outcomes: list[EpisodeOutcome],
) -> _Job | None:
    """Finish the job's episodes into `outcomes`; returns the follow-up job of resubmitted items, if any.

    Raises:
        OverloadPauseError: The breaker opened during a re-ask (that episode stays unscored).
    """
    results = _Results(client)
    again: list[tuple[JudgeRequest, dict[str, Any]]] = []
    for index in sorted(job.episodes):
        if index not in todo:
            continue
        ep, fp = todo[index]
        try:
            prepared = prepare_episode(ctx.source, ep, ctx.rubric, ctx.config, ctx.config.judge.samples)
            packs = evidence_packs(ctx.source, prepared, ctx.config.frames.jpeg_quality)
        except EvaluationError as e:
            todo.pop(index)
            outcomes.append(record_failure(ctx, ep, fp, f"{type(e).__name__}: {e}"))
            continue
        call_ctx = ctx.call_context(prepared, batch=True)
        sources = _sources(job, index)
        ready, retry = [], []
        for pack in packs:
            prompt, request = build_request(ctx.rubric, prepared, pack, ctx.config)
            source = sources.get(pack.sample_index)
            result = None if source is None else results.get(source.batch_id, source.custom_id)
            first = _reply(result, request.custom_id)
            if source is not None and source.may_resubmit and _reason(first) in RESUBMITTED_REASONS:
                retry.append((request, pack, source, first))
                continue
            ready.append((prompt, request, pack, first, None if source is None else source.batch_id))
        if retry:  # the episode waits for the follow-up batch, which names where its other samples are
            siblings = {
                str(pack.sample_index): [bid, sources[pack.sample_index].custom_id]
                for _, _, pack, _, bid in ready
                if bid is not None
            }
            for request, pack, source, error in retry:
                ctx.store.record_call(failed_call(error, "first", request, pack, call_ctx, source.batch_id))
                entry = {
                    "episode": index,
                    "sample": pack.sample_index,
                    "fingerprint": fp,
                    "attempt": ITEM_ATTEMPTS,
                    "siblings": siblings,
                }
                again.append((request, entry))
            continue
        todo.pop(index)
        samples = []
        for prompt, request, pack, first, batch_id in ready:
            watch = SampleWatch(client, first)
            make = partial(_request, prompt=prompt, ctx=ctx, episode=ep.index, sample=pack.sample_index, watch=watch)
            sample = judge_sample(watch, prompt, request, pack, ctx.rubric, call_ctx, make, first, batch_id)
            for call in sample.calls:
                if call.attempts or call.failure_reason != BREAKER_OPEN:  # stopped before sending: not a call
                    ctx.store.record_call(call)
            stopped = next((c for c in sample.calls if c.failure_reason == BREAKER_OPEN), None)
            if stopped is not None:
                raise OverloadPauseError(stopped.failure_detail or BREAKER_OPEN)
            samples.append(sample)
        outcomes.append(finish_episode(ctx, prepared, samples))
    if not again:
        return None
    batch_id, meta = submit_batch(ctx, client, again)
    log.info("resubmitted %d expired, canceled or missing requests of %s as %s", len(meta), job.batch_id, batch_id)
    ctx.store.add_batch_event(job.batch_id, "resubmitted", {"batch_id": batch_id, "custom_ids": sorted(meta)})
    return _Job(batch_id, meta, frozenset(e["episode"] for e in meta.values()))


def _sources(job: _Job, episode: int) -> dict[int, _Source]:
    """Where each sample's result of an episode is: this job, or (a follow-up's siblings) an earlier batch."""
    own = {cid: e for cid, e in job.requests.items() if e["episode"] == episode}
    sources = {}
    for entry in own.values():
        for sample, (batch_id, cid) in entry.get("siblings", {}).items():
            sources[int(sample)] = _Source(batch_id, cid, may_resubmit=False)
    for cid, entry in own.items():
        sources[entry["sample"]] = _Source(job.batch_id, cid, entry.get("attempt", 1) < ITEM_ATTEMPTS)
    return sources


class _Results:
    """Result lines of batches, fetched once per batch, by custom_id."""

    def __init__(self, client: AnthropicJudgeClient) -> None:
        self._client = client
        self._by_batch: dict[str, dict[str, Any]] = {}

    def get(self, batch_id: str, cid: str) -> Any:
        if batch_id not in self._by_batch:
            entries, _, _ = call_with_retries(
                lambda: list(self._client.sdk.messages.batches.results(batch_id)),
                self._client.retry,
                f"batch {batch_id} results",
            )
            self._by_batch[batch_id] = {e.custom_id: e.result for e in entries}
        return self._by_batch[batch_id].get(cid)


def _reason(reply: JudgeReply | JudgeCallError) -> str | None:
    return reply.reason if isinstance(reply, JudgeCallError) else None


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


def _request(
    messages: list[dict], kind: str, *, prompt: Any, ctx: RunContext, episode: int, sample: int, watch: SampleWatch
) -> JudgeRequest:
    """A re-ask of a batch sample (synchronous); after a reply cut off at max_tokens it gets a grown budget."""
    request = request_for(prompt, messages, custom_id(episode, sample, kind), ctx.config)
    return with_grown_budget(request, ctx.config.judge) if kind == "reask" and watch.cut_off else request
