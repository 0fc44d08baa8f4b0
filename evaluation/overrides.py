"""Human overrides of judge scores: an append-only table beside the judge's records, and effective scores.

A reviewer never edits a judge record. Each correction is a new `overrides` row (who, when, the
score they saw, the new score, a reason code, a note); a later override of the same episode and
criterion supersedes an earlier one by its higher id, never by an update or delete (triggers reject
both). The effective score of a criterion is the latest override, else the latest scored judge
result. The table registers its own row (`review`) in `schema_components`, so the judge's schema
version is untouched.

Example:
    with EvaluationStore(path) as store, OverrideStore(store) as overrides:
        overrides.record("fold_act", 3, "R3", 1.0, "view_ambiguous", "push visible in right wrist", "ana", 0.0)
        scores = effective_scores(store, "fold_act")  # {3: {"R3": EffectiveScore(effective=1.0, ...)}}
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from evaluation.errors import EvaluationError, StoreError
from evaluation.store import EvaluationStore
from evaluation.vocabulary import SCORE_LEVELS

REVIEW_SCHEMA_VERSION = 1  # of the `overrides` table (component "review" in schema_components)

# Why a reviewer changed (or confirmed) a score. "confirmed" records a human label equal to the judge's.
REASON_CODES: tuple[str, ...] = (
    "judge_missed_evidence",  # the evidence is in the frames/videos, the judge did not see or cite it
    "view_ambiguous",  # the judge's views cannot show it (e.g. R3 displacement from overhead); another view does
    "rubric_misapplied",  # the judge saw the right things but scored against the wrong anchor
    "heuristic_disagrees",  # the motion heuristic was right and the judge wrong (or a heuristic-only score fixed)
    "judge_hallucination",  # the judge cited something that did not happen
    "confirmed",  # the reviewer checked the videos and agrees with the score shown
    "other",  # anything else: say what in the note
)
SOURCES: tuple[str, ...] = ("override", "judge", "heuristic", "none")  # where an effective score comes from

_SCHEMA = """
CREATE TABLE IF NOT EXISTS overrides (
  override_id INTEGER PRIMARY KEY AUTOINCREMENT, created_at TEXT NOT NULL, dataset_id TEXT NOT NULL,
  episode_index INTEGER NOT NULL, criterion TEXT NOT NULL, old_score REAL, new_score REAL NOT NULL,
  reason TEXT NOT NULL, note TEXT NOT NULL, reviewer TEXT NOT NULL,
  supersedes INTEGER REFERENCES overrides(override_id), judge_score_id INTEGER);
CREATE INDEX IF NOT EXISTS overrides_by_episode ON overrides(dataset_id, episode_index, criterion);
CREATE TRIGGER IF NOT EXISTS overrides_no_update BEFORE UPDATE ON overrides
  BEGIN SELECT RAISE(ABORT, 'overrides is append-only'); END;
CREATE TRIGGER IF NOT EXISTS overrides_no_delete BEFORE DELETE ON overrides
  BEGIN SELECT RAISE(ABORT, 'overrides is append-only'); END;
"""
_JUDGE_SCORES = """
SELECT s.id AS score_id, s.episode_index, s.criterion, s.score, s.source
FROM latest_episode_results r JOIN scores s ON s.result_id = r.id
WHERE r.dataset_id = ?
"""


class OverrideError(EvaluationError):
    """An override is invalid (score off the scale, unknown reason code, no reviewer); nothing was recorded."""


@dataclass(frozen=True)
class Override:
    """One human override, as stored."""

    override_id: int  # increasing; the highest id of an (episode, criterion) is the effective one
    dataset_id: str  # dataset name in the store
    episode_index: int  # episode within the dataset
    criterion: str  # rubric criterion id, e.g. "R3"
    old_score: float | None  # the effective score the reviewer saw when overriding (None: none shown)
    new_score: float  # 0, 0.5 or 1
    reason: str  # reason code, one of REASON_CODES
    note: str  # free text
    reviewer: str  # who
    created_at: str  # UTC ISO 8601, milliseconds
    supersedes: int | None = None  # override that was effective when this one was written (None: the judge's)
    judge_score_id: int | None = None  # `scores.id` of the judge record effective underneath, if any

    @property
    def changes_score(self) -> bool:
        """Whether the reviewer changed the score they saw (False for a confirmation)."""
        return self.old_score is None or not math.isclose(self.old_score, self.new_score)


@dataclass(frozen=True)
class EffectiveScore:
    """The score that counts for one criterion of one episode, and where it comes from."""

    criterion: str  # rubric criterion id
    judge: float | None  # score of the latest scored judge result (LLM or heuristic scorer); None if none
    override: float | None  # latest override's score; None if never overridden
    effective: float | None  # override if any, else judge
    source: str  # "override", "judge", "heuristic" (a run of the heuristic scorer) or "none"
    overridden_by: Override | None  # the effective override, if any


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class OverrideStore:
    """Appends overrides to the evaluation store's file; safe across threads and processes.

    It keeps its own SQLite connection to the same file (WAL), so the judge's store stays read-only
    for the review app; every write is one `BEGIN IMMEDIATE` transaction, so concurrent writers
    (threads, or two review servers) are serialised and none is lost. Use as a context manager.
    """

    def __init__(self, store: EvaluationStore) -> None:
        """Create the `overrides` table if needed and register schema component `review`.

        Raises:
            StoreError: The store is in memory, cannot be opened, or has a newer review schema.
        """
        self.store = store
        path = Path(store.path)
        if str(path) == ":memory:":
            raise StoreError("overrides need an evaluation store file, not ':memory:'; pass --store.path=<file>")
        try:
            self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30.0)
            self._conn.row_factory = sqlite3.Row
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            row = self._conn.execute("SELECT version FROM schema_components WHERE component = 'review'").fetchone()
            if row is not None and row[0] > REVIEW_SCHEMA_VERSION:
                raise StoreError(
                    f"{path} has review schema version {row[0]}; this so101-review knows {REVIEW_SCHEMA_VERSION}: "
                    f"upgrade it"
                )
            self._conn.executescript(_SCHEMA)
            self._conn.execute("INSERT OR IGNORE INTO schema_components VALUES ('review', ?)", (REVIEW_SCHEMA_VERSION,))
        except sqlite3.Error as e:
            raise StoreError(f"cannot open the overrides table in {path}: {e}; check --store.path") from e
        self._lock = threading.Lock()

    def __enter__(self) -> OverrideStore:
        """Return self."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the connection."""
        self.close()

    def close(self) -> None:
        """Close this store's own connection (the wrapped EvaluationStore stays open)."""
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

    def record(
        self, dataset_id: str, episode_index: int, criterion: str, new_score: float, reason: str, note: str,
        reviewer: str, expected_old: float | None,
    ) -> Override:  # fmt: skip
        """Append an override; never updates. Returns it as stored.

        Args:
            dataset_id: Dataset name in the store.
            episode_index: Episode within the dataset.
            criterion: Rubric criterion id, e.g. "R3".
            new_score: 0, 0.5 or 1.
            reason: One of REASON_CODES.
            note: Free text ("" allowed; required for reason "other").
            reviewer: Who is overriding.
            expected_old: The effective score the reviewer saw (stored as `old_score`). If another
                override landed meanwhile, both are kept and this one (higher id) becomes effective;
                `supersedes` names the one it replaced, so the audit trail shows the race.

        Raises:
            OverrideError: A value is not allowed (nothing is written).
            StoreError: The database refused the write.
        """
        _validate(dataset_id, episode_index, criterion, new_score, reason, note, reviewer, expected_old)
        try:
            with self._tx() as c:
                key = (dataset_id, episode_index, criterion)
                previous = c.execute(
                    "SELECT MAX(override_id) FROM overrides"
                    " WHERE dataset_id = ? AND episode_index = ? AND criterion = ?",
                    key,
                ).fetchone()[0]
                judge = c.execute(_JUDGE_SCORES + " AND s.episode_index = ? AND s.criterion = ?", key).fetchone()
                cursor = c.execute(
                    "INSERT INTO overrides (created_at, dataset_id, episode_index, criterion, old_score, new_score,"
                    " reason, note, reviewer, supersedes, judge_score_id) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    (_now(), dataset_id, episode_index, criterion, expected_old, float(new_score), reason, note,
                     reviewer.strip(), previous, None if judge is None else judge["score_id"]),
                )  # fmt: skip
                row = c.execute("SELECT * FROM overrides WHERE override_id = ?", (cursor.lastrowid,)).fetchone()
        except sqlite3.Error as e:
            raise StoreError(f"cannot record the override in {self.store.path}: {e}; nothing was written") from e
        return _override(row)

    def history(self, dataset_id: str, episode_index: int | None = None) -> list[Override]:
        """Every override of a dataset (or one episode), oldest first."""
        return overrides_of(self.store, dataset_id, episode_index)


def _validate(
    dataset_id: str, episode_index: int, criterion: str, new_score: float, reason: str, note: str, reviewer: str,
    expected_old: float | None,
) -> None:  # fmt: skip
    if not dataset_id:
        raise OverrideError("an override needs a dataset id")
    if isinstance(episode_index, bool) or not isinstance(episode_index, int) or episode_index < 0:
        raise OverrideError(f"episode_index={episode_index!r}; allowed: an integer >= 0")
    if not criterion or not criterion.strip():
        raise OverrideError("an override needs a criterion id (e.g. R3)")
    if isinstance(new_score, bool) or not isinstance(new_score, int | float) or float(new_score) not in SCORE_LEVELS:
        raise OverrideError(f"score={new_score!r}; allowed: {list(SCORE_LEVELS)}")
    if reason not in REASON_CODES:
        raise OverrideError(f"reason={reason!r}; allowed: {list(REASON_CODES)}")
    if reason == "other" and not note.strip():
        raise OverrideError("reason 'other' needs a note that says what was wrong")
    if not reviewer or not reviewer.strip():
        raise OverrideError("an override needs a reviewer name (so101-review --reviewer=<name>)")
    if expected_old is not None and not (isinstance(expected_old, int | float) and 0.0 <= expected_old <= 1.0):
        raise OverrideError(f"expected_old={expected_old!r}; allowed: None or a score in 0..1")


def _override(row: sqlite3.Row) -> Override:
    return Override(
        override_id=int(row["override_id"]),
        dataset_id=row["dataset_id"],
        episode_index=int(row["episode_index"]),
        criterion=row["criterion"],
        old_score=row["old_score"],
        new_score=float(row["new_score"]),
        reason=row["reason"],
        note=row["note"],
        reviewer=row["reviewer"],
        created_at=row["created_at"],
        supersedes=row["supersedes"],
        judge_score_id=row["judge_score_id"],
    )


def _has_overrides_table(store: EvaluationStore) -> bool:
    rows = store.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'overrides'")
    return bool(rows)


def overrides_of(store: EvaluationStore, dataset_id: str, episode_index: int | None = None) -> list[Override]:
    """Every override of a dataset (or one episode), oldest first; empty when none was ever recorded."""
    if not _has_overrides_table(store):
        return []
    if episode_index is None:
        rows = store.query("SELECT * FROM overrides WHERE dataset_id = ? ORDER BY override_id", (dataset_id,))
    else:
        rows = store.query(
            "SELECT * FROM overrides WHERE dataset_id = ? AND episode_index = ? ORDER BY override_id",
            (dataset_id, episode_index),
        )
    return [_override(r) for r in rows]


def effective_scores(store: EvaluationStore, dataset_id: str) -> dict[int, dict[str, EffectiveScore]]:
    """Per episode, per criterion: the latest override (highest id), else the latest scored judge result.

    Episodes appear when they have a scored judge result or an override. The judge side comes from
    the `latest_episode_results` view (the newest scored result per episode, whatever its run).
    """
    judged: dict[tuple[int, str], tuple[float | None, str]] = {}
    for r in store.query(_JUDGE_SCORES, (dataset_id,)):
        judged[(int(r["episode_index"]), r["criterion"])] = (r["score"], r["source"])
    latest: dict[tuple[int, str], Override] = {}
    for o in overrides_of(store, dataset_id):
        latest[(o.episode_index, o.criterion)] = o  # ascending ids: the last one wins
    out: dict[int, dict[str, EffectiveScore]] = {}
    for key in sorted(judged.keys() | latest.keys()):
        episode, criterion = key
        judge_score, judge_source = judged.get(key, (None, "judge"))
        o = latest.get(key)
        if o is not None:
            source, effective = "override", o.new_score
        elif judge_score is not None:
            source, effective = ("heuristic" if judge_source == "heuristic" else "judge"), judge_score
        else:
            source, effective = "none", None
        out.setdefault(episode, {})[criterion] = EffectiveScore(
            criterion=criterion,
            judge=judge_score,
            override=None if o is None else o.new_score,
            effective=effective,
            source=source,
            overridden_by=o,
        )
    return out
