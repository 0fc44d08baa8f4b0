"""Creating a Message Batch at most once, though a create's reply can be lost.

A create that times out, loses its connection or answers 5xx may still have made the batch (and
the batch will be billed). Retrying it blindly, as `call_with_retries` does for idempotent calls,
can leave a second, untracked, paid batch. The Message Batches API has no idempotency key and no
metadata field on a batch, so:

    1. intent     the submission (a fresh id; custom_id -> episode, sample, fingerprint) is recorded
                  in the store before the create request is sent
    2. create     one attempt; its reply names the batch -> recorded as "created" with its job
    3. reconcile  after a failure that may have made the batch (anything retryable but a 429), list
                  the newest batches: one created since the intent (less CLOCK_SKEW_S), not known to
                  the store, with exactly our request count is ours -> "adopted". None: retry the
                  create (after the usual backoff). The list itself failing ends the run with the
                  intent open; the next run reconciles it (step 4) before doing anything else.
    4. orphans    an intent with no outcome (a crash between create and record, a list that failed)
                  is reconciled the same way at the next run: "adopted" or "not_found".

The match is by count and time, so it is checked when the results arrive: every custom_id ends with
the first NONCE_CHARS characters of the submission id, and a result line without our custom_id is
ignored (its request counts as missing and is resubmitted once; see batch_mode). A batch that is
created but not yet listed when we look (the API is eventually consistent) can still be created
twice; each is then tracked only if its reply arrives, which is the residual risk.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from evaluation.errors import JudgeCallError
from evaluation.judge.anthropic_client import RETRYABLE_REASONS, AnthropicJudgeClient, call_with_retries
from evaluation.judge.client import JudgeRequest
from evaluation.judge.run_context import RunContext
from evaluation.store import BatchSubmission

log = logging.getLogger(__name__)

NONCE_CHARS = 12  # of the submission id, appended to each custom_id ("ep12-s3-first-0123456789ab": 64 max)
CLOCK_SKEW_S = 300.0  # a batch created this long before our intent (by the API's clock) still matches
LIST_PAGE = 100  # batches per list request (the API allows 1..1000)
NOT_MADE = frozenset({"rate_limited"})  # a 429 is refused before anything is made


def submit_batch(
    ctx: RunContext, client: AnthropicJudgeClient, entries: list[tuple[JudgeRequest, dict[str, Any]]]
) -> tuple[str, dict[str, dict[str, Any]]]:
    """Create one batch of `entries` (request, its bookkeeping) at most once; returns (batch id, custom_id -> entry).

    Raises:
        JudgeCallError: The create failed for good, or its outcome could not be checked (the intent stays
            open and the next run reconciles it).
    """
    submission_id = uuid.uuid4().hex
    nonce = submission_id[:NONCE_CHARS]
    requests, meta = [], {}
    for request, entry in entries:
        cid = f"{request.custom_id}-{nonce}"
        requests.append({"custom_id": cid, "params": request.params()})
        meta[cid] = entry
    submission = ctx.store.record_batch_submission(
        BatchSubmission(submission_id, ctx.run_id, ctx.config_hash, ctx.source.dataset_id, str(ctx.source.root), meta)
    )
    once = replace(client.retry, max_attempts=1)
    for attempt in range(1, client.retry.max_attempts + 1):
        try:
            batch, _, _ = call_with_retries(
                lambda: client.sdk.messages.batches.create(requests=requests), once, "batch create"
            )
        except JudgeCallError as e:
            if e.reason not in RETRYABLE_REASONS:
                ctx.store.resolve_batch_submission(submission_id, "not_found")  # refused: nothing was made
                raise
            if attempt == client.retry.max_attempts:
                raise  # it may exist: the next run reconciles the open intent
            wait_s = client.retry.backoff_s(attempt, None)
            log.warning("batch create: %s (attempt %d); checking for it in %.2f s", e.detail, attempt, wait_s)
            time.sleep(wait_s)
            if e.reason not in NOT_MADE:
                found = find_created(ctx, client, submission)
                if found is not None:
                    log.info("the lost create made Message Batch %s; tracking it", found)
                    ctx.store.resolve_batch_submission(submission_id, "adopted", found)
                    return found, meta
            continue
        ctx.store.resolve_batch_submission(submission_id, "created", batch.id)
        log.info("submitted Message Batch %s with %d requests", batch.id, len(requests))
        return batch.id, meta
    raise AssertionError("unreachable")  # the loop returns or raises


def reconcile_orphans(ctx: RunContext, client: AnthropicJudgeClient) -> None:
    """Resolve this dataset's and configuration's submissions that never learned their batch (step 4).

    Raises:
        JudgeCallError: Listing the batches failed for good (the intents stay open).
    """
    for submission in ctx.store.unresolved_batch_submissions(ctx.config_hash, ctx.source.dataset_id):
        found = find_created(ctx, client, submission)
        event = "not_found" if found is None else "adopted"
        log.info("batch submission %s of an earlier run: %s %s", submission.submission_id, event, found or "")
        ctx.store.resolve_batch_submission(submission.submission_id, event, found)


def find_created(ctx: RunContext, client: AnthropicJudgeClient, submission: BatchSubmission) -> str | None:
    """The batch a submission's create made, if the API lists one (the oldest match).

    Raises:
        JudgeCallError: Listing failed for good.
    """
    since = datetime.fromisoformat(submission.created_at) - timedelta(seconds=CLOCK_SKEW_S)
    tracked = ctx.store.tracked_batch_ids()
    wanted = len(submission.requests)

    def scan() -> list[Any]:
        found = []
        for batch in client.sdk.messages.batches.list(limit=LIST_PAGE):  # newest first; pages fetched as needed
            if batch.created_at < since:
                break
            counts = batch.request_counts
            total = counts.processing + counts.succeeded + counts.errored + counts.canceled + counts.expired
            if batch.id not in tracked and total == wanted:
                found.append(batch)
        return found

    candidates, _, _ = call_with_retries(scan, client.retry, "batch list")
    if len(candidates) > 1:
        log.warning(
            "%d untracked batches match submission %s; taking the oldest", len(candidates), submission.submission_id
        )
    return min(candidates, key=lambda b: b.created_at).id if candidates else None
