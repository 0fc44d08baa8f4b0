"""Message Batches bookkeeping in the evaluation store: submissions, the jobs they became, job events.

    batch_submissions        written before `batches.create` is sent (the intent: who, which dataset,
                             custom_id -> episode, sample, fingerprint)
    batch_submission_events  how the intent ended: "created" (the reply named the batch), "adopted"
                             (the reply was lost; the batch was found by listing), "not_found"
    batch_jobs               a batch known to exist, written with its "created"/"adopted" event
    batch_job_events         "collected", "abandoned" (both close the job), "superseded" (an episode
                             changed after submission; its result is ignored), "resubmitted"

The functions take a connection inside the store's transaction (writes) or lock (reads).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from evaluation.store_schema import now_utc, to_json

CLOSING_EVENTS = ("collected", "abandoned")  # a job with one of these is never collected again
RESOLVING_EVENTS = ("created", "adopted", "not_found")  # how a submission can end


@dataclass(frozen=True)
class BatchSubmission:
    """A Message Batch about to be created; recorded before the create request is sent."""

    submission_id: str  # uuid4 hex; its first characters end every custom_id of the batch (see batch_submit)
    run_id: str  # run that submits
    config_hash: str  # judgment hash
    dataset_id: str  # dataset name in the store
    dataset_root: str  # absolute dataset folder at submission time
    requests: dict[str, dict[str, Any]]  # batch custom_id -> {"episode", "sample", "fingerprint", ...}
    created_at: str = ""  # UTC ISO 8601 as stored ("" before it is recorded)


@dataclass(frozen=True)
class BatchJob:
    """A Message Batch known to exist, not yet collected or abandoned."""

    batch_id: str  # API id
    run_id: str  # run that submitted (or adopted) it
    created_at: str  # when it was recorded, UTC ISO 8601
    dataset_id: str  # dataset it was made for (a version-1 job: its run's dataset)
    dataset_root: str  # dataset folder it was made from (a version-1 job: its run's folder)
    requests: dict[str, dict[str, Any]]  # batch custom_id -> {"episode", "sample", "fingerprint", ...}


def insert_submission(conn: sqlite3.Connection, s: BatchSubmission) -> BatchSubmission:
    """Append a submission (intent); returns it with its timestamp."""
    at = now_utc()
    conn.execute(
        "INSERT INTO batch_submissions (submission_id, run_id, created_at, config_hash, dataset_id, dataset_root,"
        " request_count, requests_json) VALUES (?,?,?,?,?,?,?,?)",
        (
            s.submission_id,
            s.run_id,
            at,
            s.config_hash,
            s.dataset_id,
            s.dataset_root,
            len(s.requests),
            to_json(s.requests),
        ),
    )
    return BatchSubmission(s.submission_id, s.run_id, s.config_hash, s.dataset_id, s.dataset_root, s.requests, at)


def resolve_submission(conn: sqlite3.Connection, submission_id: str, event: str, batch_id: str | None) -> None:
    """Append how a submission ended; "created" and "adopted" also append its batch job (same transaction)."""
    if event not in RESOLVING_EVENTS or (batch_id is None) != (event == "not_found"):
        raise ValueError(f"submission event {event!r} with batch id {batch_id!r}")  # a caller bug
    at = now_utc()
    if batch_id is not None:
        conn.execute(
            "INSERT INTO batch_jobs (batch_id, run_id, created_at, config_hash, requests_json, dataset_id,"
            " dataset_root, submission_id) SELECT ?, run_id, ?, config_hash, requests_json, dataset_id, dataset_root,"
            " submission_id FROM batch_submissions WHERE submission_id = ?",
            (batch_id, at, submission_id),
        )
    conn.execute(
        "INSERT INTO batch_submission_events (submission_id, at, event, batch_id) VALUES (?,?,?,?)",
        (submission_id, at, event, batch_id),
    )


def unresolved_submissions(conn: sqlite3.Connection, config_hash: str, dataset_id: str) -> list[BatchSubmission]:
    """Submissions of a dataset and configuration whose create never got an answer (crash, lost reply), oldest first."""
    rows = conn.execute(
        "SELECT * FROM batch_submissions s WHERE config_hash = ? AND dataset_id = ? AND NOT EXISTS"
        " (SELECT 1 FROM batch_submission_events e WHERE e.submission_id = s.submission_id) ORDER BY created_at",
        (config_hash, dataset_id),
    ).fetchall()
    return [
        BatchSubmission(
            r["submission_id"],
            r["run_id"],
            r["config_hash"],
            r["dataset_id"],
            r["dataset_root"],
            json.loads(r["requests_json"]),
            r["created_at"],
        )
        for r in rows
    ]


def tracked_batch_ids(conn: sqlite3.Connection) -> set[str]:
    """Every batch id this store knows (of any dataset): such a batch is never adopted again."""
    return {r[0] for r in conn.execute("SELECT batch_id FROM batch_jobs").fetchall()}


def insert_job_event(conn: sqlite3.Connection, batch_id: str, event: str, detail: dict[str, Any]) -> None:
    """Append an event to a batch job."""
    conn.execute(
        "INSERT INTO batch_job_events (batch_id, at, event, detail_json) VALUES (?,?,?,?)",
        (batch_id, now_utc(), event, to_json(detail)),
    )


def open_jobs(conn: sqlite3.Connection, config_hash: str, dataset_id: str | None) -> list[BatchJob]:
    """Jobs of a configuration (and dataset; None: every dataset) with no closing event, oldest first."""
    closing = ", ".join(f"'{e}'" for e in CLOSING_EVENTS)
    rows = conn.execute(
        "SELECT b.batch_id, b.run_id, b.created_at, b.requests_json,"
        " COALESCE(NULLIF(b.dataset_id, ''), r.dataset_id) AS dataset,"
        " COALESCE(NULLIF(b.dataset_root, ''), r.dataset_root) AS root"
        " FROM batch_jobs b JOIN runs r ON r.run_id = b.run_id"
        f" WHERE b.config_hash = ? AND NOT EXISTS (SELECT 1 FROM batch_job_events e"
        f" WHERE e.batch_id = b.batch_id AND e.event IN ({closing})) ORDER BY b.created_at, b.rowid",
        (config_hash,),
    ).fetchall()
    return [
        BatchJob(r["batch_id"], r["run_id"], r["created_at"], r["dataset"], r["root"], json.loads(r["requests_json"]))
        for r in rows
        if dataset_id is None or r["dataset"] == dataset_id
    ]
