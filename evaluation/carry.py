"""Scores follow their episodes into a curated dataset: the judge's results and people's overrides, by content.

so101-edit writes a new dataset and, beside it, where each episode came from (`meta/so101/lineage.json`,
teleop/dataset/lineage.py). The first time so101-judge, so101-review or so101-report opens the new
dataset, each episode kept whole whose content fingerprint (length, rate, task, state, action) equals
its source episode's gets that episode's current judge results and overrides copied from the source
dataset's store into its own, bound to its new index and fingerprint:

    source store (fold.evaluation.sqlite)          new store (fold_clean.evaluation.sqlite)
      runs r1 ─ episode_results ep 3 ─ scores  ──►   runs carried-… (mode 'carried') ─ results ep 1 ─ scores
      overrides ep 3 (bound to its fingerprint) ──►   overrides ep 1 (bound to the new one)
                                                     carried_episodes: ep 1 <- fold ep 3

A trimmed episode holds other frames, so nothing follows it: it starts unscored. Copies are new rows
(the store is append-only); `carried_episodes` records each carry once, and an episode the new
store already scores or overrides is left alone, so a later open never shadows newer work.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluation.episode_source import DatasetSource, open_dataset
from evaluation.errors import DatasetReadError
from evaluation.overrides import OverrideStore, bound_overrides_sql
from evaluation.store import EvaluationStore, default_store_path
from evaluation.store_schema import now_utc, to_json
from teleop.dataset.lineage import LineageError, Origin, read_lineage


@dataclass(frozen=True)
class CarriedEpisode:
    """What one episode of the curated dataset receives from its source episode."""

    origin: Origin
    fingerprint: str  # of the episode in the curated dataset
    source_dataset_id: str
    source_fingerprint: str
    runs: dict[str, dict[str, Any]]  # source run_id -> its row
    results: list[dict[str, Any]]  # scored episode_results rows, oldest first
    scores: dict[int, list[dict[str, Any]]]  # source result id -> its score rows
    calls: dict[str, list[dict[str, Any]]]  # source run_id -> the episode's call rows
    overrides: list[dict[str, Any]]  # bound to the source fingerprint, oldest first


@dataclass
class CarryReport:
    """What was carried, and why anything was not."""

    carried: list[tuple[int, int, int]] = field(default_factory=list)  # (episode, results, overrides)
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """One line per fact, for the command that opened the dataset."""
        out = list(self.notes)
        if self.carried:
            results = sum(r for _, r, _ in self.carried)
            overrides = sum(o for _, _, o in self.carried)
            out.insert(
                0,
                f"carried the scores of {len(self.carried)} episode(s) from the dataset(s) they were "
                f"curated from ({results} judge result(s), {overrides} override(s))",
            )
        return out


def carry_scores(source: DatasetSource, store_path: Path) -> CarryReport:
    """Copy the scores of the whole episodes of a curated dataset from its sources' stores into `store_path`."""
    report = CarryReport()
    try:
        origins = read_lineage(source.root)
    except LineageError as e:
        report.notes.append(str(e))
        return report
    if not origins:
        return report
    done = _already_scored(store_path, source, list(origins))
    trimmed = [o.episode_index for o in origins if not o.whole and o.episode_index not in done]
    if trimmed:  # said until they are scored, not at every open forever
        report.notes.append(f"{len(trimmed)} trimmed episode(s) start unscored (their frames changed): {trimmed}")
    todo = [o for o in origins if o.whole and o.episode_index not in done]
    plans: list[CarriedEpisode] = []
    for root in sorted({o.source_root for o in todo}):
        plans += _plan_from(Path(root), [o for o in todo if o.source_root == root], source, report)
    if plans:
        _write(store_path, source, plans)
        report.carried += [(p.origin.episode_index, len(p.results), len(p.overrides)) for p in plans]
    return report


def _already_scored(store_path: Path, new: DatasetSource, origins: list[Origin]) -> set[int]:
    """Episodes the new store already carries, scores or overrides as they are now: never carried over again."""
    if not store_path.is_file():
        return set()
    done = set()
    with _read_only(store_path) as conn:
        tables = [t for t in ("carried_episodes", "episode_results", "overrides") if _has_table(conn, t)]
        if "overrides" in tables and "episode_fingerprint" not in _columns(conn, "overrides"):
            tables.remove("overrides")  # a review schema-1 file: its overrides bind through results, checked above
        for o in origins:
            fp = new.fingerprint(new.episode(o.episode_index))
            for table in tables:
                sql = f"SELECT 1 FROM {table} WHERE dataset_id = ? AND episode_index = ? AND episode_fingerprint = ?"
                if conn.execute(sql, (new.dataset_id, o.episode_index, fp)).fetchone():
                    done.add(o.episode_index)
    return done


def _plan_from(root: Path, origins: list[Origin], new: DatasetSource, report: CarryReport) -> list[CarriedEpisode]:
    """What each origin of one source dataset brings along, read from that dataset and its store."""
    store_path = default_store_path(root)
    if not store_path.is_file():
        return []  # nothing was ever scored there
    try:
        old = open_dataset(root)
    except DatasetReadError as e:
        report.notes.append(f"scores of {root} not carried: the dataset cannot be read ({e})")
        return []
    plans = []
    with _read_only(store_path) as conn:
        ids = [r[0] for r in conn.execute("SELECT DISTINCT dataset_id FROM runs WHERE dataset_root = ?", (str(root),))]
        ids = ids or [root.name]
        for origin in origins:
            new_episode = new.episode(origin.episode_index)
            try:
                old_episode = old.episode(origin.source_episode)
            except DatasetReadError:
                report.notes.append(f"episode {origin.episode_index}: {root} has no episode {origin.source_episode}")
                continue
            if old.content_fingerprint(old_episode) != new.content_fingerprint(new_episode):
                report.notes.append(
                    f"episode {origin.episode_index}: not carried, its content differs from episode "
                    f"{origin.source_episode} of {root} (changed since the edit)"
                )
                continue
            plan = _read_episode(conn, ids, origin, old.fingerprint(old_episode), new.fingerprint(new_episode))
            if plan.results or plan.overrides:
                plans.append(plan)
    return plans


def _read_episode(conn: sqlite3.Connection, ids: list[str], origin: Origin, old_fp: str, new_fp: str) -> CarriedEpisode:
    marks = ", ".join("?" * len(ids))
    key = (*ids, origin.source_episode, old_fp)
    results = _rows(
        conn,
        f"SELECT * FROM episode_results WHERE dataset_id IN ({marks}) AND episode_index = ?"
        " AND episode_fingerprint = ? AND status = 'scored' ORDER BY id",
        key,
    )
    runs = {r["run_id"]: _rows(conn, "SELECT * FROM runs WHERE run_id = ?", (r["run_id"],))[0] for r in results}
    scores = {r["id"]: _rows(conn, "SELECT * FROM scores WHERE result_id = ? ORDER BY id", (r["id"],)) for r in results}
    calls = {
        run: _rows(
            conn,
            "SELECT * FROM calls WHERE run_id = ? AND episode_index = ? ORDER BY call_id",
            (run, origin.source_episode),
        )
        for run in runs
    }
    overrides = []
    if _has_table(conn, "overrides"):
        sql = (
            f"SELECT * FROM ({bound_overrides_sql(conn)}) WHERE dataset_id IN ({marks}) AND episode_index = ?"
            " AND bound_fingerprint = ? ORDER BY override_id"
        )
        overrides = _rows(conn, sql, key)
    dataset_id = results[0]["dataset_id"] if results else (overrides[0]["dataset_id"] if overrides else ids[0])
    return CarriedEpisode(origin, new_fp, dataset_id, old_fp, runs, results, scores, calls, overrides)


def _write(store_path: Path, new: DatasetSource, plans: list[CarriedEpisode]) -> None:
    """Every copy in one transaction (the stores' own classes create or migrate the tables first)."""
    with EvaluationStore(store_path) as store, OverrideStore(store):
        pass
    with closing(sqlite3.connect(store_path, isolation_level=None, timeout=30.0)) as conn:
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("BEGIN IMMEDIATE")
        try:
            for plan in plans:
                _copy_episode(conn, new, plan)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


def _copy_episode(conn: sqlite3.Connection, new: DatasetSource, plan: CarriedEpisode) -> None:
    index, fp = plan.origin.episode_index, plan.fingerprint
    run_ids = {}
    for old_id, run in plan.runs.items():
        run_ids[old_id] = "carried-" + hashlib.sha256(f"{old_id}|{new.dataset_id}|{new.root}".encode()).hexdigest()[:16]
        if not conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_ids[old_id],)).fetchone():
            _insert(
                conn,
                "runs",
                run,
                run_id=run_ids[old_id],
                dataset_id=new.dataset_id,
                dataset_root=str(new.root),
                dataset_revision=new.revision,
                mode="carried",
            )
            detail = {
                "from_run_id": old_id,
                "from_root": plan.origin.source_root,
                "from_dataset_id": plan.source_dataset_id,
            }
            _insert(
                conn,
                "run_events",
                {"run_id": run_ids[old_id], "at": now_utc(), "event": "carried", "detail_json": to_json(detail)},
            )
        for call in plan.calls[old_id]:
            _insert(
                conn, "calls", call, drop="call_id", run_id=run_ids[old_id], episode_index=index, episode_fingerprint=fp
            )
    score_ids: dict[int, int] = {}
    for result in plan.results:
        new_result = _insert(
            conn,
            "episode_results",
            result,
            drop="id",
            run_id=run_ids[result["run_id"]],
            dataset_id=new.dataset_id,
            episode_index=index,
            episode_fingerprint=fp,
        )
        for score in plan.scores[result["id"]]:
            score_ids[score["id"]] = _insert(
                conn,
                "scores",
                score,
                drop="id",
                result_id=new_result,
                run_id=run_ids[result["run_id"]],
                episode_index=index,
            )
    override_ids: dict[int, int] = {}
    for o in plan.overrides:
        row = {k: v for k, v in o.items() if k not in ("bound_fingerprint", "bound_root")}
        override_ids[o["override_id"]] = _insert(
            conn,
            "overrides",
            row,
            drop="override_id",
            dataset_id=new.dataset_id,
            episode_index=index,
            episode_fingerprint=fp,
            dataset_root=str(new.root),
            judge_score_id=score_ids.get(o["judge_score_id"]),
            supersedes=override_ids.get(o["supersedes"]),
        )
    _insert(
        conn,
        "carried_episodes",
        {
            "at": now_utc(),
            "dataset_id": new.dataset_id,
            "episode_index": index,
            "episode_fingerprint": fp,
            "source_root": plan.origin.source_root,
            "source_dataset_id": plan.source_dataset_id,
            "source_episode": plan.origin.source_episode,
            "source_fingerprint": plan.source_fingerprint,
            "results": len(plan.results),
            "overrides": len(plan.overrides),
        },
    )


def _insert(conn: sqlite3.Connection, table: str, row: dict[str, Any], drop: str = "", **changes: Any) -> int:
    values = {k: v for k, v in row.items() if k != drop} | changes
    cursor = conn.execute(
        f"INSERT INTO {table} ({', '.join(values)}) VALUES ({', '.join('?' * len(values))})", tuple(values.values())
    )
    return int(cursor.lastrowid or 0)


def _rows(conn: sqlite3.Connection, sql: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
    return [dict(r) for r in conn.execute(sql, params).fetchall()]


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None


@contextmanager
def _read_only(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection that cannot write: another dataset's store is only read, never migrated."""
    with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30.0)) as conn:
        conn.row_factory = sqlite3.Row
        yield conn
