"""The evaluation store: SQLite beside the dataset, append-only.

Tables: `runs` (configuration, model, prompt hash, rubric version, dataset revision), `run_events`
(finished / interrupted), `calls` (one row per API request: frame manifest with image hashes, usage,
raw response, parsed result, validation errors), `episode_results` and `scores` (aggregates, written
together in one transaction when an episode completes), and the Message Batches bookkeeping
(store_batches). The schema and its migrations are in store_schema.

Append-only is enforced by the database, whoever connects: triggers refuse UPDATE, DELETE and an
INSERT whose key exists (so `INSERT OR REPLACE` cannot swap a row) on every table; corrections are
new rows (overrides.py). Our own write connection also sets `recursive_triggers` so a REPLACE would
fire the DELETE triggers too. `query()` runs on a second, read-only connection (`mode=ro`,
`query_only`), so no statement it is given can write, whatever it starts with.
`schema_components` holds one version per component sharing the file (`judge` here), so another
component can add its tables without touching the judge's version.
A crash loses at most the episodes in flight; their calls stay on record, and the next run redoes them.
"""

from __future__ import annotations

import sqlite3
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluation import store_batches
from evaluation.episode_score import EpisodeScore
from evaluation.errors import StoreError
from evaluation.store_batches import BatchJob, BatchSubmission
from evaluation.store_schema import (
    APPEND_ONLY_TABLES,
    SCHEMA_VERSION,
    create_or_migrate,
    judge_schema_version,
    now_utc,
    to_json,
)

__all__ = [
    "APPEND_ONLY_TABLES",
    "SCHEMA_VERSION",
    "BatchJob",
    "BatchSubmission",
    "CallRecord",
    "EvaluationStore",
    "RunRecord",
    "default_store_path",
]


@dataclass(frozen=True)
class RunRecord:
    """A judge run as stored."""

    run_id: str  # unique id (uuid4 hex)
    scorer: str  # "llm" or "heuristic"
    config_hash: str  # hash of everything that changes a judgment
    config: dict[str, Any]  # the full command configuration
    model: str  # requested model id (or "heuristic:motion-v2", the offline scorer and its version)
    prompt_hash: str  # prompt template + rubric text + schema
    rubric_version: str  # e.g. "cloth_fold@1a2b3c4d5e6f"
    rubric: dict[str, Any]  # rubric content
    dataset_id: str  # dataset name in the store
    dataset_root: str  # absolute dataset folder at run time
    dataset_revision: str  # hash of the dataset metadata
    tag: str  # user label, e.g. the policy name
    mode: str  # "sync", "batches" or "offline"
    forced: bool  # run with --run.force=true
    sdk_version: str  # anthropic SDK version ("" offline)


@dataclass(frozen=True)
class CallRecord:
    """One API request and its outcome."""

    run_id: str  # run
    episode_index: int  # episode
    episode_fingerprint: str  # episode content hash
    sample_index: int  # repeated sample k
    kind: str  # "first" or "reask"
    custom_id: str  # request custom id
    status: str  # "ok", "invalid" (unusable output) or "failed" (no usable reply)
    frame_manifest: list[dict[str, Any]]  # images sent (no bytes)
    attempts: int = 1  # requests sent including retries
    retry_reasons: tuple[str, ...] = ()  # reasons of retried failures
    failure_reason: str | None = None  # e.g. "overloaded", "refusal", "invalid_output"
    failure_detail: str | None = None  # readable detail
    request_id: str | None = None  # API request id
    batch_id: str | None = None  # Message Batch id, when batched
    response_model: str | None = None  # model that answered
    stop_reason: str | None = None  # API stop reason
    latency_s: float | None = None  # seconds
    usage: dict[str, int] | None = None  # reported usage
    cost_usd: float | None = None  # cost of this request, USD
    raw_response: str | None = None  # whole response body
    parsed: dict[str, Any] | None = None  # validated verdict
    validation_errors: list[str] = field(default_factory=list)  # why the output was unusable


class EvaluationStore:
    """Append-only SQLite store; thread-safe (a write and a read connection, each behind a lock).

    Use as a context manager. `Path(":memory:")` opens a private in-memory store (dry runs).
    """

    def __init__(self, path: Path) -> None:
        """Open (and create or migrate) the store.

        Raises:
            StoreError: The file cannot be opened or was written by a newer version.
        """
        self.path = path
        self._lock = threading.Lock()
        self._read_lock = threading.Lock()
        conns: list[sqlite3.Connection] = []
        try:
            write_uri, read_uri = _uris(path)
            self._conn = _connect(write_uri, conns)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._conn.execute("PRAGMA recursive_triggers=ON")  # a REPLACE's implicit delete fires the triggers
            version = judge_schema_version(self._conn)
            if version is not None and version > SCHEMA_VERSION:
                raise StoreError(
                    f"{path} has judge schema version {version}; this so101-judge knows {SCHEMA_VERSION}: upgrade it"
                )
            create_or_migrate(self._conn)
            self._reader = _connect(read_uri, conns)
            self._reader.execute("PRAGMA query_only=ON")  # refuses every write, whatever the statement
            self._reader.execute("PRAGMA recursive_triggers=ON")
        except (sqlite3.Error, OSError, StoreError) as e:
            for conn in reversed(conns):
                conn.close()
            if isinstance(e, StoreError):
                raise
            raise StoreError(f"cannot open the evaluation store {path}: {e}; check the path (--store_path)") from e

    def __enter__(self) -> EvaluationStore:
        """Return self."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the connections."""
        self.close()

    def close(self) -> None:
        """Close the connections (the reader first, so the writer's close can checkpoint the WAL)."""
        self._reader.close()
        self._conn.close()

    @contextmanager
    def _tx(self, what: str) -> Iterator[sqlite3.Connection]:
        """One write transaction; a database refusal becomes a StoreError naming `what` (nothing is written)."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException as e:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                if not isinstance(e, sqlite3.Error):
                    raise
                step = (
                    "corrections are new rows, never changes to a recorded one"
                    if "append-only" in str(e)
                    else "check the free disk space and that no other program holds a write lock, then run again"
                )
                raise StoreError(f"cannot record {what} in {self.path}: {e}; nothing was written; {step}") from e

    def start_run(self, run: RunRecord) -> None:
        """Record a new run."""
        row = {
            "run_id": run.run_id,
            "created_at": now_utc(),
            "scorer": run.scorer,
            "config_hash": run.config_hash,
            "config_json": to_json(run.config),
            "model": run.model,
            "prompt_hash": run.prompt_hash,
            "rubric_version": run.rubric_version,
            "rubric_json": to_json(run.rubric),
            "dataset_id": run.dataset_id,
            "dataset_root": run.dataset_root,
            "dataset_revision": run.dataset_revision,
            "tag": run.tag,
            "mode": run.mode,
            "forced": int(run.forced),
            "sdk_version": run.sdk_version,
        }
        with self._tx(f"run {run.run_id}") as c:
            _insert(c, "runs", row)

    def add_run_event(self, run_id: str, event: str, detail: dict[str, Any]) -> None:
        """Append an event ("finished", "interrupted", "failed") to a run."""
        with self._tx(f"run event {event!r} of run {run_id}") as c:
            _insert(
                c, "run_events", {"run_id": run_id, "at": now_utc(), "event": event, "detail_json": to_json(detail)}
            )

    def record_call(self, call: CallRecord) -> None:
        """Append one API request."""
        row = {
            "run_id": call.run_id,
            "created_at": now_utc(),
            "episode_index": call.episode_index,
            "episode_fingerprint": call.episode_fingerprint,
            "sample_index": call.sample_index,
            "kind": call.kind,
            "custom_id": call.custom_id,
            "status": call.status,
            "failure_reason": call.failure_reason,
            "failure_detail": call.failure_detail,
            "request_id": call.request_id,
            "batch_id": call.batch_id,
            "response_model": call.response_model,
            "stop_reason": call.stop_reason,
            "attempts": call.attempts,
            "retry_reasons_json": to_json(list(call.retry_reasons)),
            "latency_s": call.latency_s,
            "frame_manifest_json": to_json(call.frame_manifest),
            "usage_json": None if call.usage is None else to_json(call.usage),
            "cost_usd": call.cost_usd,
            "raw_response": call.raw_response,
            "parsed_json": None if call.parsed is None else to_json(call.parsed),
            "validation_errors_json": to_json(call.validation_errors),
        }
        with self._tx(f"call {call.custom_id} of run {call.run_id}") as c:
            _insert(c, "calls", row)

    def record_episode(
        self,
        run_id: str,
        config_hash: str,
        dataset_id: str,
        episode_index: int,
        fingerprint: str,
        result: EpisodeScore,
        motion_check: dict[str, Any],
        calls: int,
        cost_usd: float | None,
        failure_reason: str | None = None,
    ) -> None:
        """Append an episode's aggregate and its per-criterion scores in one transaction."""
        row = {
            "run_id": run_id,
            "created_at": now_utc(),
            "config_hash": config_hash,
            "dataset_id": dataset_id,
            "episode_index": episode_index,
            "episode_fingerprint": fingerprint,
            "status": result.status,
            "failure_reason": failure_reason,
            "total": result.total,
            "routed": int(result.routed),
            "route_reasons_json": to_json([r.to_dict() for r in result.reasons]),
            "motion_check_json": to_json(motion_check),
            "samples_requested": max((c.n_samples for c in result.criteria), default=0),
            "samples_valid": max((c.n_valid for c in result.criteria), default=0),
            "calls": calls,
            "cost_usd": cost_usd,
        }
        with self._tx(f"the result of episode {episode_index} of run {run_id}") as c:
            result_id = _insert(c, "episode_results", row).lastrowid
            for s in result.criteria:
                _insert(
                    c,
                    "scores",
                    {
                        "result_id": result_id,
                        "run_id": run_id,
                        "episode_index": episode_index,
                        "criterion": s.criterion,
                        "source": s.source,
                        "score": s.score,
                        "mean": s.mean,
                        "agreement": s.agreement,
                        "n_valid": s.n_valid,
                        "n_samples": s.n_samples,
                        "uncertain": int(s.uncertain),
                        "heuristic_score": s.heuristic_score,
                        "routed": int(s.routed),
                        "route_reasons_json": to_json([r.to_dict() for r in s.reasons]),
                        "evidence_frames_json": to_json(list(s.evidence_frames)),
                    },
                )

    def scored_episodes(self, config_hash: str, dataset_id: str) -> set[tuple[int, str]]:
        """(episode index, fingerprint) pairs already scored under a configuration."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT episode_index, episode_fingerprint FROM episode_results"
                " WHERE config_hash = ? AND dataset_id = ? AND status = 'scored'",
                (config_hash, dataset_id),
            ).fetchall()
        return {(r[0], r[1]) for r in rows}

    def record_batch_submission(self, submission: BatchSubmission) -> BatchSubmission:
        """Record a Message Batch about to be created (before the request is sent); returns it as stored."""
        with self._tx(f"batch submission {submission.submission_id}") as c:
            return store_batches.insert_submission(c, submission)

    def resolve_batch_submission(self, submission_id: str, event: str, batch_id: str | None = None) -> None:
        """Record how a submission ended: "created"/"adopted" (a batch id; the job is recorded too) or "not_found"."""
        with self._tx(f"{event} of batch submission {submission_id}") as c:
            store_batches.resolve_submission(c, submission_id, event, batch_id)

    def unresolved_batch_submissions(self, config_hash: str, dataset_id: str) -> list[BatchSubmission]:
        """Submissions of a dataset and configuration whose create got no answer, oldest first."""
        with self._lock:
            return store_batches.unresolved_submissions(self._conn, config_hash, dataset_id)

    def tracked_batch_ids(self) -> set[str]:
        """Every Message Batch id recorded in this store (any dataset)."""
        with self._lock:
            return store_batches.tracked_batch_ids(self._conn)

    def add_batch_event(self, batch_id: str, event: str, detail: dict[str, Any] | None = None) -> None:
        """Append "collected" or "abandoned" (both close the job), "superseded" or "resubmitted" to a batch job."""
        with self._tx(f"batch event {event!r} of {batch_id}") as c:
            store_batches.insert_job_event(c, batch_id, event, detail or {})

    def open_batch_jobs(self, config_hash: str, dataset_id: str | None = None) -> list[BatchJob]:
        """Batch jobs of a configuration and dataset that were never collected or abandoned, oldest first.

        `dataset_id=None` lists every dataset's (for inspection; a run passes its own dataset).
        """
        with self._lock:
            return store_batches.open_jobs(self._conn, config_hash, dataset_id)

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        """Run a read-only query (reports, exports, tests) on the read-only connection.

        Raises:
            StoreError: The statement is not a SELECT, or it tried to write (e.g. `WITH x AS (...) INSERT ...`).
        """
        if not sql.lstrip().upper().startswith(("SELECT", "WITH")):
            raise StoreError("EvaluationStore.query runs SELECT statements only; the store is append-only")
        with self._read_lock:
            try:
                return self._reader.execute(sql, params).fetchall()
            except sqlite3.OperationalError as e:
                if "readonly" not in str(e) and "read-only" not in str(e):
                    raise
                raise StoreError(
                    f"EvaluationStore.query is read-only and refused {_head(sql)!r}: {e}; "
                    f"writes go through the store's record_* methods"
                ) from e


def _insert(conn: sqlite3.Connection, table: str, row: dict[str, Any]) -> sqlite3.Cursor:
    columns = ", ".join(row)
    marks = ", ".join("?" * len(row))
    return conn.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks})", tuple(row.values()))


def _uris(path: Path) -> tuple[str, str]:
    """(write, read-only) SQLite URIs of a store file; a private shared-cache database for ":memory:"."""
    if str(path) == ":memory:":
        uri = f"file:evaluation-{uuid.uuid4().hex}?mode=memory&cache=shared"
        return uri, uri
    path.parent.mkdir(parents=True, exist_ok=True)
    uri = path.resolve().as_uri()
    return uri, f"{uri}?mode=ro"


def _connect(uri: str, opened: list[sqlite3.Connection]) -> sqlite3.Connection:
    conn = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None, timeout=30.0)
    opened.append(conn)
    conn.row_factory = sqlite3.Row
    return conn


def _head(sql: str, chars: int = 80) -> str:
    flat = " ".join(sql.split())
    return flat if len(flat) <= chars else flat[: chars - 3] + "..."


def default_store_path(dataset_root: Path) -> Path:
    """The store beside a dataset: `<parent>/<dataset folder>.evaluation.sqlite`."""
    return dataset_root.parent / f"{dataset_root.name}.evaluation.sqlite"
