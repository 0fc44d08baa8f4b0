"""The `overrides` table (schema component `review`), the triggers that keep it append-only, and its migration.

Version history of component `review` in `schema_components`:

    1  overrides: who, when, the score seen, the new score, reason, note, the judge score underneath
       (`judge_score_id`); BEFORE UPDATE / BEFORE DELETE triggers
    2  overrides gains episode_fingerprint (the content hash of the episode the reviewer saw, the same
       hash `episode_results` records: DatasetSource.fingerprint) and dataset_root (the dataset folder
       the review server had open); a BEFORE INSERT trigger refuses a row whose override_id exists,
       which closes `INSERT OR REPLACE` (SQLite's REPLACE deletes the old row without firing DELETE
       triggers unless `recursive_triggers` is on, and a raw connection has it off)

Migrating from 1 adds the two columns (ALTER TABLE ... ADD COLUMN fires no trigger and keeps every
row as it was) and the new trigger, in one transaction. Version-1 rows keep NULL in both columns;
readers bind each of them to the fingerprint of the judge result it overrode (`judge_score_id` ->
`scores.result_id` -> `episode_results.episode_fingerprint`, recorded with that result), which is the
episode the reviewer was looking at when the judge's score was the one underneath. A version-1 row
with no judge score underneath (a hand score of an unjudged episode) is bound to no fingerprint and
is never current: it shows as stale until someone reviews the episode again.
"""

from __future__ import annotations

import sqlite3

from evaluation.errors import StoreError

REVIEW_SCHEMA_VERSION = 2  # of the `overrides` table (component "review" in schema_components)

SCHEMA = """
CREATE TABLE IF NOT EXISTS overrides (
  override_id INTEGER PRIMARY KEY AUTOINCREMENT, created_at TEXT NOT NULL, dataset_id TEXT NOT NULL,
  episode_index INTEGER NOT NULL, criterion TEXT NOT NULL, old_score REAL, new_score REAL NOT NULL,
  reason TEXT NOT NULL, note TEXT NOT NULL, reviewer TEXT NOT NULL,
  supersedes INTEGER REFERENCES overrides(override_id), judge_score_id INTEGER,
  episode_fingerprint TEXT, dataset_root TEXT);
CREATE INDEX IF NOT EXISTS overrides_by_episode ON overrides(dataset_id, episode_index, criterion);
CREATE TRIGGER IF NOT EXISTS overrides_no_update BEFORE UPDATE ON overrides
  BEGIN SELECT RAISE(ABORT, 'overrides is append-only'); END;
CREATE TRIGGER IF NOT EXISTS overrides_no_delete BEFORE DELETE ON overrides
  BEGIN SELECT RAISE(ABORT, 'overrides is append-only'); END;
CREATE TRIGGER IF NOT EXISTS overrides_no_replace BEFORE INSERT ON overrides
  WHEN EXISTS (SELECT 1 FROM overrides WHERE override_id = NEW.override_id)
  BEGIN SELECT RAISE(ABORT, 'overrides is append-only: a row with this key exists (no REPLACE)'); END;
"""

# Columns version 2 added to the version-1 table: (column, declaration).
_ADDED_IN_2 = (("episode_fingerprint", "TEXT"), ("dataset_root", "TEXT"))


def create_or_migrate(conn: sqlite3.Connection, where: str) -> None:
    """Bring the `overrides` table to REVIEW_SCHEMA_VERSION in one transaction (creating it in a new file).

    The version and columns are read inside the transaction, so two review servers opening one old
    file migrate it once.

    Raises:
        StoreError: The file (`where`, for the message) has a newer review schema; nothing is changed.
        sqlite3.Error: The database refused.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute("SELECT version FROM schema_components WHERE component = 'review'").fetchone()
        if row is not None and int(row[0]) > REVIEW_SCHEMA_VERSION:
            raise StoreError(
                f"{where} has review schema version {row[0]}; this so101-review knows {REVIEW_SCHEMA_VERSION}: "
                f"upgrade it"
            )
        columns = {r[1] for r in conn.execute("PRAGMA table_info(overrides)").fetchall()}
        if columns:  # a version-1 table: add what version 2 records
            for column, declaration in _ADDED_IN_2:
                if column not in columns:
                    conn.execute(f"ALTER TABLE overrides ADD COLUMN {column} {declaration}")
        for statement in _statements(SCHEMA):
            conn.execute(statement)
        conn.execute(
            "INSERT INTO schema_components VALUES ('review', ?) ON CONFLICT(component) DO UPDATE SET version ="
            " excluded.version WHERE version < excluded.version",
            (REVIEW_SCHEMA_VERSION,),
        )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _statements(script: str) -> list[str]:
    """The statements of a script; trigger bodies end in `END;`, so split there and on plain `;`."""
    out, current = [], []
    for line in script.strip().splitlines():
        current.append(line)
        text = "\n".join(current).strip()
        if text.endswith(";") and (not text.upper().startswith("CREATE TRIGGER") or text.upper().endswith("END;")):
            out.append(text.rstrip(";"))
            current = []
    return out
