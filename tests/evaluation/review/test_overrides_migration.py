"""A store whose overrides were written by review schema 1 (no fingerprints) migrates to 2 with every row kept."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from evaluation.currency import episodes_now
from evaluation.episode_source import open_dataset
from evaluation.overrides import REVIEW_SCHEMA_VERSION, OverrideStore, effective_scores, overrides_of
from evaluation.store import EvaluationStore
from tests.support.judged_store import judge_tables

DATASET = "fold_virtual"

# The overrides table exactly as review schema 1 created it.
V1_SCHEMA = """
CREATE TABLE overrides (
  override_id INTEGER PRIMARY KEY AUTOINCREMENT, created_at TEXT NOT NULL, dataset_id TEXT NOT NULL,
  episode_index INTEGER NOT NULL, criterion TEXT NOT NULL, old_score REAL, new_score REAL NOT NULL,
  reason TEXT NOT NULL, note TEXT NOT NULL, reviewer TEXT NOT NULL,
  supersedes INTEGER REFERENCES overrides(override_id), judge_score_id INTEGER);
CREATE INDEX overrides_by_episode ON overrides(dataset_id, episode_index, criterion);
CREATE TRIGGER overrides_no_update BEFORE UPDATE ON overrides
  BEGIN SELECT RAISE(ABORT, 'overrides is append-only'); END;
CREATE TRIGGER overrides_no_delete BEFORE DELETE ON overrides
  BEGIN SELECT RAISE(ABORT, 'overrides is append-only'); END;
INSERT INTO schema_components VALUES ('review', 1);
"""
V1_COLUMNS = (
    "override_id, created_at, dataset_id, episode_index, criterion, old_score, new_score, reason, note, reviewer, "
    "supersedes, judge_score_id"
)


def _write_v1(path: Path) -> list[tuple]:
    """Two schema-1 overrides: R3 of episode 0 over the judge's score, R1 of episode 1 with no judge score under it."""
    raw = sqlite3.connect(path)
    try:
        raw.executescript(V1_SCHEMA)
        (judge_r3,) = raw.execute(
            "SELECT s.id FROM latest_episode_results r JOIN scores s ON s.result_id = r.id"
            " WHERE r.episode_index = 0 AND s.criterion = 'R3'"
        ).fetchone()
        rows = [
            (
                1,
                "2026-11-30T10:00:00.000+00:00",
                DATASET,
                0,
                "R3",
                0.5,
                1.0,
                "view_ambiguous",
                "push seen",
                "ana",
                None,
                judge_r3,
            ),
            (2, "2026-11-30T10:05:00.000+00:00", DATASET, 1, "R1", None, 0.5, "other", "hand score", "ben", None, None),
        ]
        raw.executemany(f"INSERT INTO overrides ({V1_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows)
        raw.commit()
    finally:
        raw.close()
    return rows


def test_a_v1_overrides_store_migrates_with_its_rows_kept(judged_store: Path, dataset_root: Path):
    rows = _write_v1(judged_store)
    before = judge_tables(judged_store)
    now = episodes_now(open_dataset(dataset_root))
    with EvaluationStore(judged_store) as store:
        unmigrated = overrides_of(store, DATASET)  # a reader (so101-report) needs no migration
        assert [o.episode_fingerprint for o in unmigrated] == [now[0], None]
        with OverrideStore(store):
            pass
        with OverrideStore(store):  # a second open finds it migrated and changes nothing
            pass
        components = dict(store.query("SELECT component, version FROM schema_components"))
        migrated = overrides_of(store, DATASET)
        scores = effective_scores(store, DATASET, now)
    assert components["review"] == REVIEW_SCHEMA_VERSION == 2
    raw = sqlite3.connect(judged_store)
    try:
        assert raw.execute(f"SELECT {V1_COLUMNS} FROM overrides ORDER BY override_id").fetchall() == rows
        assert raw.execute("SELECT episode_fingerprint, dataset_root FROM overrides").fetchall() == [(None, None)] * 2
        for sql in (
            "UPDATE overrides SET new_score = 0",
            "DELETE FROM overrides",
            f"INSERT OR REPLACE INTO overrides ({V1_COLUMNS}) SELECT {V1_COLUMNS} FROM overrides",
        ):
            with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                raw.execute(sql)
    finally:
        raw.close()
    assert migrated == unmigrated
    # Bound to the fingerprint of the judge result it overrode, which is the episode as it is: applied.
    r3 = scores[0]["R3"]
    assert (r3.effective, r3.source, r3.overridden_by, r3.stale) == (1.0, "override", migrated[0], ())
    # Nothing to bind the hand score to: it is kept, shown as stale, and never applied.
    r1 = scores[1]["R1"]
    assert (r1.effective, r1.source, r1.overridden_by, r1.stale) == (0.0, "judge", None, (migrated[1],))
    assert judge_tables(judged_store) == before


def test_a_new_override_after_the_migration_records_its_fingerprint(judged_store: Path, dataset_root: Path):
    _write_v1(judged_store)
    source = open_dataset(dataset_root)
    now = episodes_now(source)
    with EvaluationStore(judged_store) as store, OverrideStore(store) as overrides:
        o = overrides.record(
            DATASET,
            1,
            "R1",
            1.0,
            "judge_missed_evidence",
            "",
            "ana",
            0.0,
            fingerprint=now[1],
            dataset_root=str(source.root),
        )
        assert (o.override_id, o.episode_fingerprint, o.dataset_root, o.supersedes) == (
            3,
            now[1],
            str(source.root),
            None,
        )
        r1 = effective_scores(store, DATASET, now)[1]["R1"]
    assert (r1.effective, r1.overridden_by, r1.stale) == (1.0, o, ())  # the stale v1 hand score is superseded
