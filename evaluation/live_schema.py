"""The `live_score_imports` table (schema component `live`): which live score files the store has taken in.

Version history of component `live` in `schema_components`:

    1  live_score_imports: one row per live score file imported (episode, the fingerprint its labels were
       bound to, the file's content digest, operator, when scored, skipped, what was recorded and what
       was left out and why); BEFORE UPDATE / DELETE / INSERT-of-an-existing-key triggers

The labels themselves are `overrides` rows (reason 'live', evaluation/live_labels.py); this table makes
the import idempotent. It is keyed by the file's content, not by the episode's fingerprint, so a score
left behind by an episode that was re-recorded since is never taken again as a label of the new
content. A component of its own, so the judge's and the review's schema versions are untouched.
"""

from __future__ import annotations

import sqlite3

from evaluation.errors import StoreError

LIVE_SCHEMA_VERSION = 1  # of the `live_score_imports` table (component "live" in schema_components)

_STATEMENTS = (
    """CREATE TABLE IF NOT EXISTS live_score_imports (
  id INTEGER PRIMARY KEY AUTOINCREMENT, imported_at TEXT NOT NULL, dataset_id TEXT NOT NULL,
  episode_index INTEGER NOT NULL, episode_fingerprint TEXT NOT NULL, file TEXT NOT NULL, digest TEXT NOT NULL,
  operator TEXT NOT NULL, scored_at TEXT NOT NULL, skipped INTEGER NOT NULL, recorded_json TEXT NOT NULL,
  left_out_json TEXT NOT NULL, UNIQUE(dataset_id, episode_index, digest))""",
    """CREATE TRIGGER IF NOT EXISTS live_score_imports_no_update BEFORE UPDATE ON live_score_imports
  BEGIN SELECT RAISE(ABORT, 'live_score_imports is append-only'); END""",
    """CREATE TRIGGER IF NOT EXISTS live_score_imports_no_delete BEFORE DELETE ON live_score_imports
  BEGIN SELECT RAISE(ABORT, 'live_score_imports is append-only'); END""",
    """CREATE TRIGGER IF NOT EXISTS live_score_imports_no_replace BEFORE INSERT ON live_score_imports
  WHEN EXISTS (SELECT 1 FROM live_score_imports WHERE id = NEW.id OR (dataset_id = NEW.dataset_id
    AND episode_index = NEW.episode_index AND digest = NEW.digest))
  BEGIN SELECT RAISE(ABORT, 'live_score_imports is append-only: a row with this key exists (no REPLACE)'); END""",
)


def create_or_migrate(conn: sqlite3.Connection, where: str) -> None:
    """Create the table and register component `live`, inside the caller's transaction.

    Call it after `BEGIN IMMEDIATE` (the import writes its rows in the same transaction), on a file
    the evaluation store has opened before (`schema_components` exists).

    Raises:
        StoreError: The file (`where`, for the message) has a newer live schema; nothing is changed.
        sqlite3.Error: The database refused.
    """
    row = conn.execute("SELECT version FROM schema_components WHERE component = 'live'").fetchone()
    if row is not None and int(row[0]) > LIVE_SCHEMA_VERSION:
        raise StoreError(
            f"{where} has live-score schema version {row[0]}; this version knows {LIVE_SCHEMA_VERSION}: upgrade it"
        )
    for statement in _STATEMENTS:
        conn.execute(statement)
    conn.execute(
        "INSERT INTO schema_components VALUES ('live', ?) ON CONFLICT(component) DO UPDATE SET version ="
        " excluded.version WHERE version < excluded.version",
        (LIVE_SCHEMA_VERSION,),
    )
