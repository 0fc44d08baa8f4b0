"""Human overrides of judge scores: an append-only table beside the judge's records, and effective scores.

A reviewer never edits a judge record. Each correction is a new `overrides` row (who, when, the
score they saw, the new score, a reason code, a note, the fingerprint of the episode they saw and
the dataset folder); a later override of the same episode and criterion supersedes an earlier one by
its higher id, never by an update or delete (triggers reject both, and REPLACE). The effective score
of a criterion is the latest current override, else the latest current scored judge result, where
current means made on the episode as it is now (evaluation.currency): an override or result made
before the episode was re-recorded or deleted is stale, reported as such, and never applied. The
table registers its own row (`review`) in `schema_components` (schema and migration:
overrides_schema), so the judge's schema version is untouched. Scores the operator typed during a
rollout are rows of this table too (reason LIVE_REASON, evaluation/live_labels.py), so they count,
go stale and are superseded like any person's label.

Example:
    with EvaluationStore(path) as store, OverrideStore(store) as overrides:
        overrides.record("fold_act", 3, "R3", 1.0, "view_ambiguous", "push visible in right wrist", "ana", 0.0,
                         fingerprint=source.fingerprint(source.episode(3)), dataset_root=str(source.root))
        scores = effective_scores(store, "fold_act", episodes_now(source))  # {3: {"R3": EffectiveScore(...)}}
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from evaluation.currency import ResultRef, episodes_on_record, select_current
from evaluation.errors import EvaluationError, StoreError
from evaluation.overrides_schema import REVIEW_SCHEMA_VERSION as REVIEW_SCHEMA_VERSION  # re-exported
from evaluation.overrides_schema import create_or_migrate
from evaluation.store import EvaluationStore
from evaluation.truth import NOT_TRUTH
from evaluation.vocabulary import LIVE_REASON, REASON_CODES, SCORE_LEVELS  # the reasons are re-exported

# Scores of every scored judge result of a dataset, with the fingerprint each result was made on (never truth's).
_JUDGE_SCORES = f"""
SELECT s.id AS score_id, r.id AS result_id, r.episode_index, r.episode_fingerprint, s.criterion, s.score, s.source
FROM episode_results r JOIN scores s ON s.result_id = r.id
WHERE r.dataset_id = ? AND r.status = 'scored' AND r.{NOT_TRUTH}
"""
# An override with the fingerprint it is bound to: its own (schema 2), else that of the judge result it overrode.
_BOUND = """
SELECT o.*, COALESCE({own}, e.episode_fingerprint) AS bound_fingerprint, {root} AS bound_root
FROM overrides o LEFT JOIN scores s ON s.id = o.judge_score_id LEFT JOIN episode_results e ON e.id = s.result_id
"""


class OverrideError(EvaluationError):
    """An override is invalid (score off the scale, unknown reason code, no reviewer); nothing was recorded."""


@dataclass(frozen=True)
class Override:
    """One human override, as stored."""

    override_id: int  # increasing; the highest current id of an (episode, criterion) is the effective one
    dataset_id: str  # dataset name in the store
    episode_index: int  # episode within the dataset
    criterion: str  # rubric criterion id, e.g. "R3"
    old_score: float | None  # the effective score the reviewer saw when overriding (None: none shown)
    new_score: float  # 0, 0.5 or 1
    reason: str  # reason code, one of REASON_CODES, or LIVE_REASON for an operator's live score
    note: str  # free text
    reviewer: str  # who
    created_at: str  # UTC ISO 8601, milliseconds
    supersedes: int | None = None  # override that was effective when this one was written (None: the judge's)
    judge_score_id: int | None = None  # `scores.id` of the judge record effective underneath, if any
    # Fingerprint of the episode the reviewer saw: recorded (schema 2), else the overridden judge result's
    # (schema-1 rows); None when neither is known, and then the override is never current.
    episode_fingerprint: str | None = None
    dataset_root: str | None = None  # dataset folder the review server had open (None: schema-1 rows)

    @property
    def live(self) -> bool:
        """Whether the operator typed it during the rollout (so101-deploy), not a reviewer in so101-review."""
        return self.reason == LIVE_REASON

    @property
    def changes_score(self) -> bool:
        """Whether the reviewer changed the score they saw (False for a confirmation)."""
        return self.old_score is None or not math.isclose(self.old_score, self.new_score)

    def is_current(self, now: Mapping[int, str]) -> bool:
        """Whether it was made on the episode as it is now (`now`: episode index -> fingerprint)."""
        return self.episode_fingerprint is not None and now.get(self.episode_index) == self.episode_fingerprint


@dataclass(frozen=True)
class EffectiveScore:
    """The score that counts for one criterion of one episode, and where it comes from."""

    criterion: str  # rubric criterion id
    judge: float | None  # score of the latest current scored judge result (LLM or heuristic scorer); None if none
    override: float | None  # latest current override's score; None if never overridden (or only stale ones)
    effective: float | None  # override if any, else judge
    source: str  # "override", "judge", "heuristic" (a run of the heuristic scorer) or "none"
    overridden_by: Override | None  # the effective override, if any
    stale: tuple[Override, ...] = ()  # later overrides made on an earlier version of the episode: not applied


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class OverrideStore:
    """Appends overrides to the evaluation store's file; safe across threads and processes.

    It keeps its own SQLite connection to the same file (WAL), so the judge's store stays read-only
    for the review app; every write is one `BEGIN IMMEDIATE` transaction, so concurrent writers
    (threads, or two review servers) are serialised and none is lost. Use as a context manager.
    """

    def __init__(self, store: EvaluationStore) -> None:
        """Create the `overrides` table, or migrate it to REVIEW_SCHEMA_VERSION, and register component `review`.

        Raises:
            StoreError: The store is in memory, cannot be opened, or has a newer review schema.
        """
        self.store = store
        path = Path(store.path)
        if str(path) == ":memory:":
            raise StoreError("overrides need an evaluation store file, not ':memory:'; pass --store_path=<file>")
        try:
            self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30.0)
        except sqlite3.Error as e:
            raise StoreError(f"cannot open the overrides table in {path}: {e}; check --store_path") from e
        try:
            self._conn.row_factory = sqlite3.Row
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._conn.execute("PRAGMA recursive_triggers=ON")  # a REPLACE's implicit delete fires the triggers too
            create_or_migrate(self._conn, str(path))
        except (sqlite3.Error, StoreError) as e:
            self._conn.close()
            if isinstance(e, StoreError):
                raise
            raise StoreError(f"cannot open the overrides table in {path}: {e}; check --store_path") from e
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
        self,
        dataset_id: str,
        episode_index: int,
        criterion: str,
        new_score: float,
        reason: str,
        note: str,
        reviewer: str,
        expected_old: float | None,
        *,
        fingerprint: str | None = None,
        dataset_root: str = "",
    ) -> Override:
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
            fingerprint: The episode's fingerprint as the reviewer saw it (the review page passes the
                dataset's). None binds the override to the newest scored judge result of the episode.
            dataset_root: The dataset folder the reviewer had open ("" when unknown).

        Raises:
            OverrideError: A value is not allowed, or there is neither a fingerprint nor a judge result
                to bind the override to (nothing is written).
            StoreError: The database refused the write.
        """
        _validate(dataset_id, episode_index, criterion, new_score, reason, note, reviewer, expected_old, fingerprint)
        key = (dataset_id, episode_index, criterion)
        try:
            with self._tx() as c:
                judge = _judge_underneath(c, dataset_id, episode_index, criterion, fingerprint)
                if fingerprint is None:
                    if judge is None:
                        raise OverrideError(
                            f"episode {episode_index} of {dataset_id!r} has no judge result to bind the override to; "
                            f"pass the episode's fingerprint (so101-review does)"
                        )
                    fingerprint = str(judge["episode_fingerprint"])
                previous = c.execute(
                    "SELECT MAX(override_id) FROM (" + bound_overrides_sql(c) + ")"
                    " WHERE dataset_id = ? AND episode_index = ? AND criterion = ? AND bound_fingerprint = ?",
                    (*key, fingerprint),
                ).fetchone()[0]
                cursor = c.execute(
                    "INSERT INTO overrides (created_at, dataset_id, episode_index, criterion, old_score, new_score,"
                    " reason, note, reviewer, supersedes, judge_score_id, episode_fingerprint, dataset_root)"
                    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        _now(),
                        dataset_id,
                        episode_index,
                        criterion,
                        expected_old,
                        float(new_score),
                        reason,
                        note,
                        reviewer.strip(),
                        previous,
                        None if judge is None else judge["score_id"],
                        fingerprint,
                        dataset_root,
                    ),
                )
                row = c.execute(bound_overrides_sql(c) + " WHERE o.override_id = ?", (cursor.lastrowid,)).fetchone()
        except sqlite3.Error as e:
            raise StoreError(f"cannot record the override in {self.store.path}: {e}; nothing was written") from e
        return _override(row)

    def history(self, dataset_id: str, episode_index: int | None = None) -> list[Override]:
        """Every override of a dataset (or one episode), oldest first, stale ones included."""
        return overrides_of(self.store, dataset_id, episode_index)


def _judge_underneath(
    c: sqlite3.Connection, dataset_id: str, episode_index: int, criterion: str, fingerprint: str | None
) -> sqlite3.Row | None:
    """The newest scored judge score of the criterion (on `fingerprint` when given), with its result's fingerprint."""
    sql = _JUDGE_SCORES + " AND r.episode_index = ? AND s.criterion = ?"
    params: tuple[object, ...] = (dataset_id, episode_index, criterion)
    if fingerprint is not None:
        sql, params = sql + " AND r.episode_fingerprint = ?", (*params, fingerprint)
    return c.execute(sql + " ORDER BY r.id DESC LIMIT 1", params).fetchone()


def _validate(
    dataset_id: str,
    episode_index: int,
    criterion: str,
    new_score: float,
    reason: str,
    note: str,
    reviewer: str,
    expected_old: float | None,
    fingerprint: str | None,
) -> None:
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
    if fingerprint is not None and (not isinstance(fingerprint, str) or not fingerprint.strip()):
        raise OverrideError(f"fingerprint={fingerprint!r}; allowed: None or the episode's fingerprint")


def bound_overrides_sql(conn: sqlite3.Connection | EvaluationStore) -> str:
    """SELECT of overrides with their bound fingerprint; reads a schema-1 table too (before its migration)."""
    sql = "SELECT name FROM pragma_table_info('overrides') WHERE name = 'episode_fingerprint'"
    migrated = bool(conn.query(sql) if isinstance(conn, EvaluationStore) else conn.execute(sql).fetchall())
    if migrated:
        return _BOUND.format(own="o.episode_fingerprint", root="o.dataset_root")
    return _BOUND.format(own="NULL", root="NULL")


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
        episode_fingerprint=row["bound_fingerprint"],
        dataset_root=row["bound_root"],
    )


def _has_overrides_table(store: EvaluationStore) -> bool:
    rows = store.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'overrides'")
    return bool(rows)


def overrides_of(store: EvaluationStore, dataset_id: str, episode_index: int | None = None) -> list[Override]:
    """Every override of a dataset (or one episode), oldest first, stale ones included; empty when none exist."""
    if not _has_overrides_table(store):
        return []
    sql, params = bound_overrides_sql(store) + " WHERE o.dataset_id = ?", (dataset_id,)
    if episode_index is not None:
        sql, params = sql + " AND o.episode_index = ?", (dataset_id, episode_index)
    return [_override(r) for r in store.query(sql + " ORDER BY o.override_id", params)]


def _split(
    overrides: list[Override], now: Mapping[int, str]
) -> dict[tuple[int, str], tuple[Override | None, tuple[Override, ...]]]:
    """Per (episode, criterion): the latest current override, and the later ones made on another version."""
    out: dict[tuple[int, str], tuple[Override | None, tuple[Override, ...]]] = {}
    for o in overrides:  # ascending ids
        applied, stale = out.get((o.episode_index, o.criterion), (None, ()))
        out[(o.episode_index, o.criterion)] = (o, ()) if o.is_current(now) else (applied, (*stale, o))
    return out


def stale_overrides(store: EvaluationStore, dataset_id: str, now: Mapping[int, str]) -> list[Override]:
    """Overrides that would be effective but were made on another version of their episode (or a deleted one)."""
    return [o for _, stale in _split(overrides_of(store, dataset_id), now).values() for o in stale]


def effective_scores(
    store: EvaluationStore, dataset_id: str, now: Mapping[int, str] | None = None
) -> dict[int, dict[str, EffectiveScore]]:
    """Per episode, per criterion: the latest current override (highest id), else the latest current judge result.

    Args:
        store: The evaluation store.
        dataset_id: Dataset name in the store.
        now: Episode index -> fingerprint of the episode now (`currency.episodes_now` of the opened
            dataset). None uses the newest fingerprint on record per episode (`episodes_on_record`).

    Episodes appear when they exist in `now` and have a scored judge result, an override, or a stale
    override; judge results and overrides made on another fingerprint never count (`stale` lists the
    overrides left out).
    """
    now = episodes_on_record(store, dataset_id) if now is None else now
    rows = store.query(_JUDGE_SCORES, (dataset_id,))
    refs = {ResultRef(int(r["result_id"]), int(r["episode_index"]), r["episode_fingerprint"]) for r in rows}
    chosen = {ref.result_id for ref in select_current(refs, now).current.values()}
    judged: dict[tuple[int, str], tuple[float | None, str]] = {}
    for r in rows:
        if int(r["result_id"]) in chosen:
            judged[(int(r["episode_index"]), r["criterion"])] = (r["score"], r["source"])
    split = _split(overrides_of(store, dataset_id), now)
    out: dict[int, dict[str, EffectiveScore]] = {}
    for key in sorted(k for k in judged.keys() | split.keys() if k[0] in now):
        episode, criterion = key
        judge_score, judge_source = judged.get(key, (None, "judge"))
        o, stale = split.get(key, (None, ()))
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
            stale=stale,
        )
    return out
