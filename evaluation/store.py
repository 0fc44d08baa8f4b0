"""The evaluation store: SQLite beside the dataset, append-only.

Tables: `runs` (configuration, model, prompt hash, rubric version, dataset revision), `run_events`
(finished / interrupted), `calls` (one row per API request: frame manifest with image hashes, usage,
raw response, parsed result, validation errors), `episode_results` and `scores` (aggregates, written
together in one transaction when an episode completes), `batch_jobs` (Message Batches in flight).
Triggers reject UPDATE and DELETE on every table: corrections are new rows (issue 8 adds overrides).
`schema_components` holds one version per component sharing the file (`judge` here), so another
component can add its tables without touching the judge's version.
A crash loses at most the episodes in flight; their calls stay on record, and the next run redoes them.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evaluation.aggregate import EpisodeScore
from evaluation.errors import StoreError

SCHEMA_VERSION = 1  # of the judge's tables; other components (review overrides) register their own row
APPEND_ONLY_TABLES = ("runs", "run_events", "calls", "episode_results", "scores", "batch_jobs", "batch_job_events")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY, created_at TEXT NOT NULL, scorer TEXT NOT NULL, config_hash TEXT NOT NULL,
  config_json TEXT NOT NULL, model TEXT NOT NULL, prompt_hash TEXT NOT NULL, rubric_version TEXT NOT NULL,
  rubric_json TEXT NOT NULL, dataset_id TEXT NOT NULL, dataset_root TEXT NOT NULL, dataset_revision TEXT NOT NULL,
  tag TEXT NOT NULL, mode TEXT NOT NULL, forced INTEGER NOT NULL, sdk_version TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS run_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL REFERENCES runs(run_id), at TEXT NOT NULL,
  event TEXT NOT NULL, detail_json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS calls (
  call_id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL REFERENCES runs(run_id), created_at TEXT NOT NULL,
  episode_index INTEGER NOT NULL, episode_fingerprint TEXT NOT NULL, sample_index INTEGER NOT NULL,
  kind TEXT NOT NULL, custom_id TEXT NOT NULL, status TEXT NOT NULL, failure_reason TEXT, failure_detail TEXT,
  request_id TEXT, batch_id TEXT, response_model TEXT, stop_reason TEXT, attempts INTEGER NOT NULL,
  retry_reasons_json TEXT NOT NULL, latency_s REAL, frame_manifest_json TEXT NOT NULL, usage_json TEXT,
  cost_usd REAL, raw_response TEXT, parsed_json TEXT, validation_errors_json TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS calls_by_episode ON calls(run_id, episode_index);
CREATE TABLE IF NOT EXISTS episode_results (
  id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL REFERENCES runs(run_id), created_at TEXT NOT NULL,
  config_hash TEXT NOT NULL, dataset_id TEXT NOT NULL, episode_index INTEGER NOT NULL,
  episode_fingerprint TEXT NOT NULL, status TEXT NOT NULL, failure_reason TEXT, total REAL, routed INTEGER NOT NULL,
  route_reasons_json TEXT NOT NULL, motion_check_json TEXT NOT NULL, samples_requested INTEGER NOT NULL,
  samples_valid INTEGER NOT NULL, calls INTEGER NOT NULL, cost_usd REAL, UNIQUE(run_id, episode_index));
CREATE INDEX IF NOT EXISTS results_by_config ON episode_results(config_hash, dataset_id, episode_index);
CREATE TABLE IF NOT EXISTS scores (
  id INTEGER PRIMARY KEY AUTOINCREMENT, result_id INTEGER NOT NULL REFERENCES episode_results(id),
  run_id TEXT NOT NULL, episode_index INTEGER NOT NULL, criterion TEXT NOT NULL, source TEXT NOT NULL,
  score REAL, mean REAL, agreement REAL, n_valid INTEGER NOT NULL, n_samples INTEGER NOT NULL,
  uncertain INTEGER NOT NULL, heuristic_score REAL, routed INTEGER NOT NULL, route_reasons_json TEXT NOT NULL,
  evidence_frames_json TEXT NOT NULL, UNIQUE(run_id, episode_index, criterion));
CREATE TABLE IF NOT EXISTS batch_jobs (
  batch_id TEXT PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs(run_id), created_at TEXT NOT NULL,
  config_hash TEXT NOT NULL, requests_json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS batch_job_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT, batch_id TEXT NOT NULL REFERENCES batch_jobs(batch_id),
  at TEXT NOT NULL, event TEXT NOT NULL);
CREATE VIEW IF NOT EXISTS latest_episode_results AS
  SELECT r.* FROM episode_results r
  WHERE r.status = 'scored' AND r.id = (
    SELECT MAX(x.id) FROM episode_results x
    WHERE x.dataset_id = r.dataset_id AND x.episode_index = r.episode_index AND x.status = 'scored');
"""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _json(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)


@dataclass(frozen=True)
class RunRecord:
    """A judge run as stored."""

    run_id: str  # unique id (uuid4 hex)
    scorer: str  # "llm" or "heuristic"
    config_hash: str  # hash of everything that changes a judgment
    config: dict[str, Any]  # the full command configuration
    model: str  # requested model id (or "heuristic:motion-v1")
    prompt_hash: str  # prompt template + rubric text + schema
    rubric_version: str  # e.g. "cloth_fold@1a2b3c4d5e6f"
    rubric: dict[str, Any]  # rubric content
    dataset_id: str  # dataset name in the store
    dataset_root: str  # absolute dataset folder at run time
    dataset_revision: str  # hash of the dataset metadata
    tag: str  # user label, e.g. the policy name
    mode: str  # "sync", "batches" or "offline"
    forced: bool  # run with --force
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
    """Append-only SQLite store; thread-safe (one connection behind a lock). Use as a context manager."""

    def __init__(self, path: Path) -> None:
        """Open (and create or migrate) the store.

        Raises:
            StoreError: The file cannot be opened or was written by a newer version.
        """
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30.0)
            self._conn.row_factory = sqlite3.Row
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_components (component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
            )
            row = self._conn.execute("SELECT version FROM schema_components WHERE component = 'judge'").fetchone()
            if row is not None and row[0] > SCHEMA_VERSION:
                raise StoreError(
                    f"{path} has judge schema version {row[0]}; this so101-judge knows {SCHEMA_VERSION}: upgrade it"
                )
            self._conn.executescript(_SCHEMA + _append_only_triggers())
            self._conn.execute("INSERT OR IGNORE INTO schema_components VALUES ('judge', ?)", (SCHEMA_VERSION,))
        except sqlite3.Error as e:
            raise StoreError(f"cannot open the evaluation store {path}: {e}; check the path (--store.path)") from e
        self._lock = threading.Lock()

    def __enter__(self) -> EvaluationStore:
        """Return self."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the connection."""
        self.close()

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise

    def start_run(self, run: RunRecord) -> None:
        """Record a new run."""
        row = {
            "run_id": run.run_id, "created_at": _now(), "scorer": run.scorer, "config_hash": run.config_hash,
            "config_json": _json(run.config), "model": run.model, "prompt_hash": run.prompt_hash,
            "rubric_version": run.rubric_version, "rubric_json": _json(run.rubric), "dataset_id": run.dataset_id,
            "dataset_root": run.dataset_root, "dataset_revision": run.dataset_revision, "tag": run.tag,
            "mode": run.mode, "forced": int(run.forced), "sdk_version": run.sdk_version,
        }  # fmt: skip
        with self._tx() as c:
            _insert(c, "runs", row)

    def add_run_event(self, run_id: str, event: str, detail: dict[str, Any]) -> None:
        """Append an event ("finished", "interrupted", "failed") to a run."""
        with self._tx() as c:
            _insert(c, "run_events", {"run_id": run_id, "at": _now(), "event": event, "detail_json": _json(detail)})

    def record_call(self, call: CallRecord) -> None:
        """Append one API request."""
        row = {
            "run_id": call.run_id, "created_at": _now(), "episode_index": call.episode_index,
            "episode_fingerprint": call.episode_fingerprint, "sample_index": call.sample_index, "kind": call.kind,
            "custom_id": call.custom_id, "status": call.status, "failure_reason": call.failure_reason,
            "failure_detail": call.failure_detail, "request_id": call.request_id, "batch_id": call.batch_id,
            "response_model": call.response_model, "stop_reason": call.stop_reason, "attempts": call.attempts,
            "retry_reasons_json": _json(list(call.retry_reasons)), "latency_s": call.latency_s,
            "frame_manifest_json": _json(call.frame_manifest),
            "usage_json": None if call.usage is None else _json(call.usage), "cost_usd": call.cost_usd,
            "raw_response": call.raw_response, "parsed_json": None if call.parsed is None else _json(call.parsed),
            "validation_errors_json": _json(call.validation_errors),
        }  # fmt: skip
        with self._tx() as c:
            _insert(c, "calls", row)

    def record_episode(
        self, run_id: str, config_hash: str, dataset_id: str, episode_index: int, fingerprint: str,
        result: EpisodeScore, motion_check: dict[str, Any], calls: int, cost_usd: float | None,
        failure_reason: str | None = None,
    ) -> None:  # fmt: skip
        """Append an episode's aggregate and its per-criterion scores in one transaction."""
        row = {
            "run_id": run_id, "created_at": _now(), "config_hash": config_hash, "dataset_id": dataset_id,
            "episode_index": episode_index, "episode_fingerprint": fingerprint, "status": result.status,
            "failure_reason": failure_reason, "total": result.total, "routed": int(result.routed),
            "route_reasons_json": _json([r.to_dict() for r in result.reasons]),
            "motion_check_json": _json(motion_check),
            "samples_requested": max((c.n_samples for c in result.criteria), default=0),
            "samples_valid": max((c.n_valid for c in result.criteria), default=0), "calls": calls,
            "cost_usd": cost_usd,
        }  # fmt: skip
        with self._tx() as c:
            result_id = _insert(c, "episode_results", row).lastrowid
            for s in result.criteria:
                _insert(c, "scores", {
                    "result_id": result_id, "run_id": run_id, "episode_index": episode_index,
                    "criterion": s.criterion, "source": s.source, "score": s.score, "mean": s.mean,
                    "agreement": s.agreement, "n_valid": s.n_valid, "n_samples": s.n_samples,
                    "uncertain": int(s.uncertain), "heuristic_score": s.heuristic_score, "routed": int(s.routed),
                    "route_reasons_json": _json([r.to_dict() for r in s.reasons]),
                    "evidence_frames_json": _json(list(s.evidence_frames)),
                })  # fmt: skip

    def scored_episodes(self, config_hash: str, dataset_id: str) -> set[tuple[int, str]]:
        """(episode index, fingerprint) pairs already scored under a configuration."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT episode_index, episode_fingerprint FROM episode_results"
                " WHERE config_hash = ? AND dataset_id = ? AND status = 'scored'",
                (config_hash, dataset_id),
            ).fetchall()
        return {(r[0], r[1]) for r in rows}

    def record_batch_job(self, batch_id: str, run_id: str, config_hash: str, requests: dict[str, Any]) -> None:
        """Remember a submitted Message Batch (custom_id -> episode, sample, manifest) so a restart can collect it."""
        with self._tx() as c:
            c.execute(
                "INSERT INTO batch_jobs VALUES (?,?,?,?,?)", (batch_id, run_id, _now(), config_hash, _json(requests))
            )

    def add_batch_event(self, batch_id: str, event: str) -> None:
        """Append "collected" (results stored) or "abandoned" to a batch job."""
        with self._tx() as c:
            c.execute("INSERT INTO batch_job_events (batch_id, at, event) VALUES (?,?,?)", (batch_id, _now(), event))

    def open_batch_jobs(self, config_hash: str) -> list[tuple[str, dict[str, Any]]]:
        """Batch jobs of a configuration whose results were never collected: (batch id, requests)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT batch_id, requests_json FROM batch_jobs WHERE config_hash = ? AND batch_id NOT IN"
                " (SELECT batch_id FROM batch_job_events) ORDER BY created_at",
                (config_hash,),
            ).fetchall()
        return [(r[0], json.loads(r[1])) for r in rows]

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        """Run a read-only query (reports, exports, tests).

        Raises:
            StoreError: The statement is not a SELECT.
        """
        if not sql.lstrip().upper().startswith(("SELECT", "WITH")):
            raise StoreError("EvaluationStore.query runs SELECT statements only; the store is append-only")
        with self._lock:
            return self._conn.execute(sql, params).fetchall()


def _insert(conn: sqlite3.Connection, table: str, row: dict[str, Any]) -> sqlite3.Cursor:
    columns = ", ".join(row)
    marks = ", ".join("?" * len(row))
    return conn.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks})", tuple(row.values()))


def _append_only_triggers() -> str:
    parts = []
    for table in APPEND_ONLY_TABLES:
        for op in ("UPDATE", "DELETE"):
            parts.append(
                f"CREATE TRIGGER IF NOT EXISTS {table}_no_{op.lower()} BEFORE {op} ON {table} "
                f"BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END;"
            )
    return "\n".join(parts)


def default_store_path(dataset_root: Path) -> Path:
    """The store beside a dataset: `<parent>/<dataset folder>.evaluation.sqlite`."""
    return dataset_root.parent / f"{dataset_root.name}.evaluation.sqlite"
