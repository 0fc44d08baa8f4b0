"""Scores the operator typed during a rollout become human labels in the evaluation store.

    <dataset>/meta/so101/live_scores/episode-000003.json    written by so101-deploy (teleop/dataset/live_scores.py)
          │  read whenever so101-judge, so101-review or so101-report opens the dataset (after carry_scores)
          ▼
    overrides            one row per criterion: reason 'live', reviewer = the operator, old_score NULL (the
                         operator saw no score), bound to the episode's fingerprint now, like a review's
    live_score_imports   one row per file taken in (live_schema), so the next open records nothing new

The labels are ordinary overrides, so they count as a person's labels everywhere (effective scores,
the report's agreement), go stale when the episode is re-recorded, and a reviewer's later override
supersedes them. Left out, and said in one line each: criteria the rubric does not have, scores off
the 0 / 0.5 / 1 scale, and cells a reviewer already labelled on this version of the episode (a live
row written later would supersede that review). A skipped episode records nothing. A file that does
not read, or whose episode is not in the dataset (or has another length than when it was scored), is
named at every open until it is fixed or moved aside; nothing of it is recorded.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import sqlite3
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from evaluation import live_schema
from evaluation.episode_source import DatasetSource
from evaluation.errors import StoreError
from evaluation.overrides import LIVE_REASON, OverrideStore, bound_overrides_sql
from evaluation.rubric import load_rubric
from evaluation.store import EvaluationStore
from evaluation.store_schema import now_utc, to_json
from evaluation.truth import NOT_TRUTH
from evaluation.vocabulary import SCORE_LEVELS
from teleop.dataset.live_scores import LiveScore, LiveScoreError, live_score_paths, read_live_score


@dataclass(frozen=True)
class _Planned:
    """A live score file not yet taken in, and the episode it is bound to."""

    score: LiveScore
    file: str  # relative to the dataset folder
    digest: str  # of the file's content (`_digest`)
    fingerprint: str  # of the episode now


@dataclass
class LiveImportReport:
    """What an import recorded, and why anything was not."""

    recorded: list[tuple[int, tuple[str, ...]]] = field(default_factory=list)  # (episode, criteria recorded)
    skipped: list[int] = field(default_factory=list)  # episodes the operator skipped
    unknown: dict[str, list[int]] = field(default_factory=dict)  # criterion not in the rubric -> episodes
    off_scale: list[str] = field(default_factory=list)  # "episode 3 R1=0.3"
    reviewed: list[str] = field(default_factory=list)  # "episode 3 R1": a reviewer's label is already there
    criteria: tuple[str, ...] = ()  # the rubric's criteria the labels were checked against
    notes: list[str] = field(default_factory=list)  # files not taken in, one line each

    def lines(self) -> list[str]:
        """One line per fact, for the command that opened the dataset."""
        out = []
        if self.recorded:
            labels = sum(len(c) for _, c in self.recorded)
            out.append(
                f"recorded {labels} live label(s) of {len(self.recorded)} episode(s) the operator scored "
                f"during the rollout (reviewer = operator, reason '{LIVE_REASON}')"
            )
        if self.skipped:
            out.append(f"{len(self.skipped)} episode(s) skipped by the operator, nothing recorded: {self.skipped}")
        if self.unknown:
            named = ", ".join(f"{c} (episodes {e})" for c, e in sorted(self.unknown.items()))
            out.append(
                f"live scores of criteria the rubric ({', '.join(self.criteria)}) does not have, not recorded: {named}"
            )
        if self.off_scale:
            allowed = " / ".join(f"{s:g}" for s in SCORE_LEVELS)
            out.append(f"live scores off the {allowed} scale, not recorded: {', '.join(self.off_scale)}")
        if self.reviewed:
            out.append(f"live scores of cells a reviewer already labelled, not recorded: {', '.join(self.reviewed)}")
        return out + self.notes


def import_live_scores(
    source: DatasetSource, store_path: Path, criteria: Sequence[str] | None = None
) -> LiveImportReport:
    """Record the live scores kept beside an opened dataset as human labels in `store_path`, once each.

    Args:
        source: The opened dataset (its episodes now give the fingerprints the labels are bound to).
        store_path: The evaluation store file (created when there is something to record).
        criteria: The rubric's criterion ids; None uses the rubric of the newest judge run of the dataset
            in the store, else the built-in rubric (as the review page does).

    Raises:
        StoreError: The store cannot be written, or has a newer schema (nothing was recorded).
    """
    report = LiveImportReport()
    paths = live_score_paths(source.root)
    if not paths or str(store_path) == ":memory:":
        return report
    found: list[tuple[Path, LiveScore]] = []
    for path in paths:
        try:
            found.append((path, read_live_score(path)))
        except LiveScoreError as e:
            report.notes.append(f"live score not recorded: {e}")
    done = _imported(store_path, source.dataset_id)
    episodes = {ep.index: ep for ep in source.episodes}
    planned = []
    for path, score in found:
        digest = _digest(score)
        if (score.episode_index, digest) in done:
            continue
        aside = shlex.join(["mv", str(path), f"{path}.bad"])
        ep = episodes.get(score.episode_index)
        if ep is None:
            report.notes.append(
                f"live score not recorded: {path} scores episode {score.episode_index}, which the "
                f"dataset does not hold now; if it was lost, move the file aside: {aside}"
            )
            continue
        if score.frames is not None and score.frames != ep.length:
            report.notes.append(
                f"live score not recorded: {path} scored an episode of {score.frames} frames, "
                f"episode {ep.index} has {ep.length} now (edited since?); move the file aside: "
                f"{aside}"
            )
            continue
        relative = path.relative_to(source.root).as_posix()
        planned.append(_Planned(score, relative, digest, source.fingerprint(ep)))
    if planned:
        _write(store_path, source, planned, criteria, report)
    return report


def _digest(score: LiveScore) -> str:
    """The content of a live score, hashed (key order and layout of the file do not matter)."""
    return hashlib.sha256(json.dumps(json.loads(score.to_json()), sort_keys=True).encode()).hexdigest()[:24]


def _imported(store_path: Path, dataset_id: str) -> set[tuple[int, str]]:
    """(episode, digest) of every file the store took in for the dataset, read without writing."""
    if not store_path.is_file():
        return set()
    uri = f"{store_path.resolve().as_uri()}?mode=ro"
    try:
        with closing(sqlite3.connect(uri, uri=True, timeout=30.0)) as conn:
            if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'live_score_imports'").fetchone():
                return set()
            rows = conn.execute(
                "SELECT episode_index, digest FROM live_score_imports WHERE dataset_id = ?", (dataset_id,)
            ).fetchall()
    except sqlite3.Error as e:
        raise StoreError(f"cannot read {store_path} as an evaluation store: {e}; check --store_path") from e
    return {(int(i), str(d)) for i, d in rows}


def _write(
    store_path: Path,
    source: DatasetSource,
    planned: list[_Planned],
    criteria: Sequence[str] | None,
    report: LiveImportReport,
) -> None:
    """Every label and ledger row in one transaction (the stores' own classes create or migrate their tables first)."""
    with EvaluationStore(store_path) as store, OverrideStore(store):
        pass
    try:
        with closing(sqlite3.connect(store_path, isolation_level=None, timeout=30.0)) as conn:
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("BEGIN IMMEDIATE")
            try:
                live_schema.create_or_migrate(conn, str(store_path))
                report.criteria = tuple(criteria) if criteria is not None else _rubric_criteria(conn, source)
                for plan in planned:
                    _take_in(conn, source, plan, report)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
    except sqlite3.Error as e:
        raise StoreError(
            f"cannot record the live scores of {source.root} in {store_path}: {e}; nothing was "
            f"recorded, and the next open tries again"
        ) from e


def _rubric_criteria(conn: sqlite3.Connection, source: DatasetSource) -> tuple[str, ...]:
    """Criteria of the rubric of the newest run on the dataset, else of the built-in rubric (as the review page)."""
    row = conn.execute(
        "SELECT rubric_json FROM runs WHERE dataset_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1",
        (source.dataset_id,),
    ).fetchone()
    if row is None:
        return load_rubric().criterion_ids
    return tuple(str(c["id"]) for c in json.loads(row["rubric_json"]).get("criteria", []))


def _take_in(conn: sqlite3.Connection, source: DatasetSource, plan: _Planned, report: LiveImportReport) -> None:
    """Record one file's labels and its ledger row (nothing when another opener took it in meanwhile)."""
    score, dataset_id, index = plan.score, source.dataset_id, plan.score.episode_index
    taken = conn.execute(
        "SELECT 1 FROM live_score_imports WHERE dataset_id = ? AND episode_index = ? AND digest = ?",
        (dataset_id, index, plan.digest),
    ).fetchone()
    if taken:
        return
    recorded: list[str] = []
    left_out: dict[str, str] = {}
    if score.skipped:
        report.skipped.append(index)
    for criterion, value in score.scores.items():
        if criterion not in report.criteria:
            report.unknown.setdefault(criterion, []).append(index)
            left_out[criterion] = "not in the rubric"
        elif value not in SCORE_LEVELS:
            report.off_scale.append(f"episode {index} {criterion}={value:g}")
            left_out[criterion] = "off the scale"
        elif _reviewed(conn, dataset_id, index, criterion, plan.fingerprint):
            report.reviewed.append(f"episode {index} {criterion}")
            left_out[criterion] = "a reviewer's label is already there"
        else:
            _insert_label(conn, source, plan, criterion, value)
            recorded.append(criterion)
    if recorded:
        report.recorded.append((index, tuple(recorded)))
    conn.execute(
        "INSERT INTO live_score_imports (imported_at, dataset_id, episode_index, episode_fingerprint, file, digest,"
        " operator, scored_at, skipped, recorded_json, left_out_json) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (
            now_utc(),
            dataset_id,
            index,
            plan.fingerprint,
            plan.file,
            plan.digest,
            score.operator,
            score.scored_at,
            int(score.skipped),
            to_json(recorded),
            to_json(left_out),
        ),
    )


def _reviewed(conn: sqlite3.Connection, dataset_id: str, index: int, criterion: str, fingerprint: str) -> bool:
    """Whether a reviewer (not a live score) labelled the cell on this version of the episode."""
    sql = (
        f"SELECT 1 FROM ({bound_overrides_sql(conn)}) WHERE dataset_id = ? AND episode_index = ?"
        " AND criterion = ? AND bound_fingerprint = ? AND reason != ? LIMIT 1"
    )
    return conn.execute(sql, (dataset_id, index, criterion, fingerprint, LIVE_REASON)).fetchone() is not None


def _insert_label(
    conn: sqlite3.Connection, source: DatasetSource, plan: _Planned, criterion: str, value: float
) -> None:
    """Append one live label, as OverrideStore.record would: the judge score underneath, the label it supersedes."""
    key = (source.dataset_id, plan.score.episode_index, criterion)
    previous = conn.execute(
        f"SELECT MAX(override_id) FROM ({bound_overrides_sql(conn)})"
        " WHERE dataset_id = ? AND episode_index = ? AND criterion = ? AND bound_fingerprint = ?",
        (*key, plan.fingerprint),
    ).fetchone()[0]  # an earlier live score of this version of the episode: this one replaces it
    judge = conn.execute(
        "SELECT s.id FROM episode_results r JOIN scores s ON s.result_id = r.id WHERE r.dataset_id = ?"
        " AND r.episode_index = ? AND s.criterion = ? AND r.episode_fingerprint = ? AND r.status = 'scored'"
        f" AND r.{NOT_TRUTH} ORDER BY r.id DESC LIMIT 1",
        (*key, plan.fingerprint),
    ).fetchone()
    scored_at = datetime.fromisoformat(plan.score.scored_at).astimezone(UTC).isoformat(timespec="milliseconds")
    note = f"typed by the operator at the end of the rollout (so101-deploy); imported from {plan.file}"
    conn.execute(
        "INSERT INTO overrides (created_at, dataset_id, episode_index, criterion, old_score, new_score, reason, note,"
        " reviewer, supersedes, judge_score_id, episode_fingerprint, dataset_root) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            scored_at,
            *key,
            None,
            float(value),
            LIVE_REASON,
            note,
            plan.score.operator,
            previous,
            None if judge is None else judge[0],
            plan.fingerprint,
            str(source.root),
        ),
    )
