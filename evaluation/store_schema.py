"""The judge's tables in the evaluation store, the triggers that keep them append-only, and migrations.

Version history of component `judge` in `schema_components`:

    1  runs, run_events, calls, episode_results, scores, batch_jobs, batch_job_events;
       BEFORE UPDATE / BEFORE DELETE triggers on each
    2  batch_jobs gains dataset_id, dataset_root and submission_id (a job belongs to one dataset);
       batch_job_events gains detail_json; new batch_submissions and batch_submission_events
       (a create is recorded before it is sent); a BEFORE INSERT trigger on every table refuses a
       row whose key exists, which closes `INSERT OR REPLACE` (SQLite's REPLACE deletes the old row
       without firing DELETE triggers unless `recursive_triggers` is on, and a raw connection has it off)
    3  carried_episodes: an episode of a curated dataset whose judge results and overrides were copied
       from its source dataset's store, matched by content (evaluation/carry.py); the copies are
       ordinary rows of runs (mode 'carried'), calls, episode_results, scores and overrides

Migrating adds columns (ALTER TABLE ... ADD COLUMN, which fires no trigger and keeps every row) and
creates what is missing, in one transaction. Version-1 batch jobs keep dataset_id '' and are scoped
through their run (`runs.dataset_id`). Timestamps are UTC ISO 8601 with milliseconds (`now_utc`);
JSON columns are written with sorted keys (`to_json`).
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime

SCHEMA_VERSION = 3  # of the judge's tables; other components (review overrides) register their own row
APPEND_ONLY_TABLES = (
    "runs",
    "run_events",
    "calls",
    "episode_results",
    "scores",
    "batch_jobs",
    "batch_job_events",
    "batch_submissions",
    "batch_submission_events",
    "carried_episodes",
)

SCHEMA = """
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
  config_hash TEXT NOT NULL, requests_json TEXT NOT NULL, dataset_id TEXT NOT NULL DEFAULT '',
  dataset_root TEXT NOT NULL DEFAULT '', submission_id TEXT);
CREATE TABLE IF NOT EXISTS batch_job_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT, batch_id TEXT NOT NULL REFERENCES batch_jobs(batch_id),
  at TEXT NOT NULL, event TEXT NOT NULL, detail_json TEXT NOT NULL DEFAULT '{}');
CREATE TABLE IF NOT EXISTS batch_submissions (
  submission_id TEXT PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs(run_id), created_at TEXT NOT NULL,
  config_hash TEXT NOT NULL, dataset_id TEXT NOT NULL, dataset_root TEXT NOT NULL, request_count INTEGER NOT NULL,
  requests_json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS batch_submission_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT, submission_id TEXT NOT NULL REFERENCES batch_submissions(submission_id),
  at TEXT NOT NULL, event TEXT NOT NULL, batch_id TEXT);
CREATE TABLE IF NOT EXISTS carried_episodes (
  id INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, dataset_id TEXT NOT NULL, episode_index INTEGER NOT NULL,
  episode_fingerprint TEXT NOT NULL, source_root TEXT NOT NULL, source_dataset_id TEXT NOT NULL,
  source_episode INTEGER NOT NULL, source_fingerprint TEXT NOT NULL, results INTEGER NOT NULL,
  overrides INTEGER NOT NULL, UNIQUE(dataset_id, episode_index, episode_fingerprint));
CREATE VIEW IF NOT EXISTS latest_episode_results AS
  SELECT r.* FROM episode_results r
  WHERE r.status = 'scored' AND r.id = (
    SELECT MAX(x.id) FROM episode_results x
    WHERE x.dataset_id = r.dataset_id AND x.episode_index = r.episode_index AND x.status = 'scored');
"""

# Columns version 2 added to version-1 tables: (table, column, declaration).
_ADDED_IN_2 = (
    ("batch_jobs", "dataset_id", "TEXT NOT NULL DEFAULT ''"),
    ("batch_jobs", "dataset_root", "TEXT NOT NULL DEFAULT ''"),
    ("batch_jobs", "submission_id", "TEXT"),
    ("batch_job_events", "detail_json", "TEXT NOT NULL DEFAULT '{}'"),
)


def now_utc() -> str:
    """The current time as stored: UTC ISO 8601, milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def to_json(value: object) -> str:
    """A JSON column value (sorted keys; anything else as its string)."""
    return json.dumps(value, sort_keys=True, default=str)


def judge_schema_version(conn: sqlite3.Connection) -> int | None:
    """The judge's schema version recorded in the file; None for a new file."""
    conn.execute("CREATE TABLE IF NOT EXISTS schema_components (component TEXT PRIMARY KEY, version INTEGER NOT NULL)")
    row = conn.execute("SELECT version FROM schema_components WHERE component = 'judge'").fetchone()
    return None if row is None else int(row[0])


def create_or_migrate(conn: sqlite3.Connection) -> None:
    """Bring the judge's tables to SCHEMA_VERSION in one transaction (creating them in a new file).

    The columns are checked inside the transaction, so two processes opening one old file migrate it once.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        for table, column, declaration in _ADDED_IN_2:
            if _exists(conn, table) and column not in _columns(conn, table):
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
        for statement in _statements(SCHEMA):
            conn.execute(statement)
        for statement in _append_only_triggers(conn):
            conn.execute(statement)
        conn.execute(
            "INSERT INTO schema_components VALUES ('judge', ?) ON CONFLICT(component) DO UPDATE SET version ="
            " excluded.version WHERE version < excluded.version",
            (SCHEMA_VERSION,),
        )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _append_only_triggers(conn: sqlite3.Connection) -> list[str]:
    """BEFORE UPDATE, DELETE and INSERT-of-an-existing-key triggers for every append-only table.

    The keys come from the schema itself (rowid, and every unique index including the primary key),
    so a REPLACE on any of them is refused, not only the ones written down here.
    """
    out = []
    for table in APPEND_ONLY_TABLES:
        for op in ("UPDATE", "DELETE"):
            out.append(
                f"CREATE TRIGGER IF NOT EXISTS {table}_no_{op.lower()} BEFORE {op} ON {table} "
                f"BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END"
            )
        keys = [["rowid"], *_unique_keys(conn, table)]
        exists = " OR ".join(
            f"EXISTS (SELECT 1 FROM {table} WHERE {' AND '.join(f'{c} = NEW.{c}' for c in key)})" for key in keys
        )
        out.append(
            f"CREATE TRIGGER IF NOT EXISTS {table}_no_replace BEFORE INSERT ON {table} WHEN {exists} "
            f"BEGIN SELECT RAISE(ABORT, '{table} is append-only: a row with this key exists (no REPLACE)'); END"
        )
    return out


def _unique_keys(conn: sqlite3.Connection, table: str) -> list[list[str]]:
    keys = []
    for index in conn.execute(f"PRAGMA index_list({table})").fetchall():
        if index[2]:  # unique (the primary key's autoindex included)
            keys.append([col[2] for col in conn.execute(f"PRAGMA index_info({index[1]})").fetchall()])
    return keys


def _exists(conn: sqlite3.Connection, table: str) -> bool:
    return (
        conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone() is not None
    )


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})").fetchall()}


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]
