"""A version-1 evaluation store, built from the version-1 DDL (kept here verbatim, commit 3c64cf1).

Migration tests open such a file with today's EvaluationStore; nothing here imports the store module.
"""

import sqlite3
from pathlib import Path

V1_TABLES = ("runs", "run_events", "calls", "episode_results", "scores", "batch_jobs", "batch_job_events")

V1_SCHEMA = """
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


def _v1_triggers() -> str:
    return "\n".join(
        f"CREATE TRIGGER IF NOT EXISTS {table}_no_{op.lower()} BEFORE {op} ON {table} "
        f"BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END;"
        for table in V1_TABLES
        for op in ("UPDATE", "DELETE")
    )


_RUN = (
    "r1",
    "2026-01-05T10:00:00.000+00:00",
    "llm",
    "h1",
    "{}",
    "claude-sonnet-5-5",
    "p",
    "rub@1",
    "{}",
    "ds",
    "/data/ds",
    "rev",
    "smolvla",
    "batches",
    0,
    "2.14.0",
)


def write_v1_store(path: Path) -> None:
    """A version-1 store with one row in every table, a review component row, and an open batch job of run r1."""
    raw = sqlite3.connect(path, isolation_level=None)
    try:
        raw.execute("PRAGMA journal_mode=WAL")
        raw.execute("CREATE TABLE schema_components (component TEXT PRIMARY KEY, version INTEGER NOT NULL)")
        raw.executescript(V1_SCHEMA + _v1_triggers())
        raw.execute("INSERT INTO schema_components VALUES ('judge', 1), ('review', 1)")
        raw.execute(f"INSERT INTO runs VALUES ({','.join('?' * len(_RUN))})", _RUN)
        raw.execute("INSERT INTO run_events (run_id, at, event, detail_json) VALUES ('r1', 't', 'interrupted', '{}')")
        raw.execute(
            "INSERT INTO calls (run_id, created_at, episode_index, episode_fingerprint, sample_index, kind, custom_id,"
            " status, attempts, retry_reasons_json, frame_manifest_json, validation_errors_json, batch_id)"
            " VALUES ('r1', 't', 0, 'fp0', 0, 'first', 'ep0-s0-first', 'ok', 1, '[]', '[]', '[]', 'msgbatch_old')"
        )
        raw.execute(
            "INSERT INTO episode_results (run_id, created_at, config_hash, dataset_id, episode_index,"
            " episode_fingerprint, status, total, routed, route_reasons_json, motion_check_json, samples_requested,"
            " samples_valid, calls) VALUES ('r1', 't', 'h1', 'ds', 0, 'fp0', 'scored', 1.0, 0, '[]', '{}', 1, 1, 1)"
        )
        raw.execute(
            "INSERT INTO scores (result_id, run_id, episode_index, criterion, source, score, n_valid, n_samples,"
            " uncertain, routed, route_reasons_json, evidence_frames_json)"
            " VALUES (1, 'r1', 0, 'R1', 'judge', 1.0, 1, 1, 0, 0, '[]', '[]')"
        )
        requests = '{"ep1-s0-first": {"episode": 1, "fingerprint": "fp1", "sample": 0}}'
        raw.execute("INSERT INTO batch_jobs VALUES ('msgbatch_open', 'r1', 't1', 'h1', ?)", (requests,))
        raw.execute("INSERT INTO batch_jobs VALUES ('msgbatch_old', 'r1', 't0', 'h1', '{}')")
        raw.execute("INSERT INTO batch_job_events (batch_id, at, event) VALUES ('msgbatch_old', 't', 'collected')")
    finally:
        raw.close()
