"""Load one policy's scores from an evaluation store: judge labels, and the latest human overrides.

Selection: scored episode results of the runs that match the policy (tag and/or dataset), from one
scorer (`auto`: the LLM judge's when the selection has any, else the motion heuristic's), and per
episode the newest of them. Overrides come from `evaluation.overrides` (latest by id); an episode
counts as reviewed when it has at least one override, a "confirmed" one included.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from evaluation.errors import StoreError
from evaluation.overrides import effective_scores
from evaluation.report.config import PolicySpec
from evaluation.report.errors import MissingStoreError, NoScoresError, ReportError, UnknownTagError
from evaluation.report.scores import Cell, EpisodeScores, HumanLabel, PolicyScores
from evaluation.store import EvaluationStore

_RESULTS = (
    "SELECT e.id AS result_id, e.dataset_id, e.episode_index, r.scorer, r.model, r.rubric_version, r.rubric_json"
    " FROM episode_results e JOIN runs r ON r.run_id = e.run_id WHERE e.status = 'scored'"
)
_CHUNK = 500  # result ids per IN (...) query


def load_policy(spec: PolicySpec, scorer: str = "auto") -> PolicyScores:
    """Read a policy's scores.

    Raises:
        MissingStoreError: No store file at the policy's store path.
        UnknownTagError: No run in the store has the policy's tag.
        NoScoresError: The selection holds no scored episode (of the requested scorer).
        ReportError: The episodes were judged against rubrics with different criteria.
        StoreError: The store cannot be read.
    """
    path = spec.resolved_store()
    if not path.is_file():
        hint = (
            f"run so101-judge --dataset.root={spec.dataset_root} first"
            if spec.dataset_root is not None
            else "check --store_path"
        )
        raise MissingStoreError(f"policy {spec.label()!r}: no evaluation store at {path}; {hint}")
    with EvaluationStore(path) as store:
        return _load(store, spec, scorer, path)


def _load(store: EvaluationStore, spec: PolicySpec, scorer: str, path: Path) -> PolicyScores:
    dataset_id = spec.resolved_dataset_id()
    _check_selection(store, spec, dataset_id, path)
    sql, params = _RESULTS, []
    if spec.tag:
        sql, params = sql + " AND r.tag = ?", [*params, spec.tag]
    if dataset_id:
        sql, params = sql + " AND e.dataset_id = ?", [*params, dataset_id]
    rows = store.query(sql, tuple(params))
    where = _describe(spec, dataset_id, path)
    if not rows:
        raise NoScoresError(f"policy {spec.label()!r}: {where} holds no scored episode; run so101-judge on it first")
    scorers = {r["scorer"] for r in rows}
    chosen = ("llm" if "llm" in scorers else "heuristic") if scorer == "auto" else scorer
    kept = [r for r in rows if r["scorer"] == chosen]
    if not kept:
        raise NoScoresError(
            f"policy {spec.label()!r}: {where} has no episode scored by the {chosen} scorer "
            f"(found: {sorted(scorers)}); pass --scorer={sorted(scorers)[0]}"
        )
    latest: dict[tuple[str, int], sqlite3.Row] = {}
    for r in kept:
        key = (r["dataset_id"], int(r["episode_index"]))
        if key not in latest or r["result_id"] > latest[key]["result_id"]:
            latest[key] = r
    left_out = len({(r["dataset_id"], int(r["episode_index"])) for r in rows} - latest.keys())
    chosen_rows = [latest[k] for k in sorted(latest)]
    criteria = _criteria(chosen_rows, spec)
    scores = _scores(store, [r["result_id"] for r in chosen_rows])
    humans = _human_labels(store, sorted({r["dataset_id"] for r in chosen_rows}))
    reviewed_keys = {k[:2] for k in humans}
    episodes = []
    for r in chosen_rows:
        key = (r["dataset_id"], int(r["episode_index"]))
        cells = tuple(Cell(cid, scores.get((r["result_id"], cid)), humans.get((*key, cid))) for cid, _ in criteria)
        episodes.append(EpisodeScores(key[0], key[1], cells, key in reviewed_keys))
    return PolicyScores(
        name=spec.label(),
        source=where,
        store_path=str(path),
        dataset_ids=tuple(sorted({r["dataset_id"] for r in chosen_rows})),
        scorer=chosen,
        models=tuple(sorted({r["model"] for r in chosen_rows})),
        rubric_versions=tuple(sorted({r["rubric_version"] for r in chosen_rows})),
        criteria=criteria,
        episodes=tuple(episodes),
        left_out=left_out,
    )


def _check_selection(store: EvaluationStore, spec: PolicySpec, dataset_id: str, path: Path) -> None:
    """Name what the store does hold when the tag or dataset is unknown."""
    try:
        tags = {r[0] for r in store.query("SELECT DISTINCT tag FROM runs")}
        datasets = {r[0] for r in store.query("SELECT DISTINCT dataset_id FROM runs")}
    except sqlite3.Error as e:
        raise StoreError(f"cannot read {path} as an evaluation store: {e}") from e
    if spec.tag and spec.tag not in tags:
        known = ", ".join(repr(t) for t in sorted(tags)) or "none (no run yet)"
        raise UnknownTagError(
            f"policy {spec.label()!r}: no judge run in {path} has tag {spec.tag!r}; tags in this store: {known}"
        )
    if dataset_id and dataset_id not in datasets:
        known = ", ".join(repr(d) for d in sorted(datasets)) or "none (no run yet)"
        raise NoScoresError(
            f"policy {spec.label()!r}: {path} has no run of dataset {dataset_id!r}; datasets in this store: {known}. "
            f"Run so101-judge on it first"
        )


def _describe(spec: PolicySpec, dataset_id: str, path: Path) -> str:
    parts = [f"tag {spec.tag!r}"] if spec.tag else []
    if dataset_id:
        parts.append(f"dataset {dataset_id!r}")
    return f"{' and '.join(parts) or 'every run'} in {path}"


def _criteria(rows: list[sqlite3.Row], spec: PolicySpec) -> tuple[tuple[str, str], ...]:
    found: dict[tuple[tuple[str, str], ...], list[str]] = {}
    for r in rows:
        rubric = json.loads(r["rubric_json"])
        criteria = tuple((c["id"], c.get("name", c["id"])) for c in rubric.get("criteria", []))
        found.setdefault(criteria, []).append(r["rubric_version"])
    if len(found) > 1:
        versions = sorted({v for vs in found.values() for v in vs})
        raise ReportError(
            f"policy {spec.label()!r}: its episodes were judged against rubrics with different criteria "
            f"({versions}); select one with a tag (--tags) or judge them again under one rubric"
        )
    return next(iter(found))


def _scores(store: EvaluationStore, result_ids: list[int]) -> dict[tuple[int, str], float | None]:
    out: dict[tuple[int, str], float | None] = {}
    for start in range(0, len(result_ids), _CHUNK):
        chunk = result_ids[start : start + _CHUNK]
        marks = ",".join("?" * len(chunk))
        sql = f"SELECT result_id, criterion, score FROM scores WHERE result_id IN ({marks})"
        for r in store.query(sql, tuple(chunk)):
            out[(int(r["result_id"]), r["criterion"])] = None if r["score"] is None else float(r["score"])
    return out


def _human_labels(store: EvaluationStore, dataset_ids: list[str]) -> dict[tuple[str, int, str], HumanLabel]:
    out: dict[tuple[str, int, str], HumanLabel] = {}
    for dataset_id in dataset_ids:
        for episode, by_criterion in effective_scores(store, dataset_id).items():
            for criterion, eff in by_criterion.items():
                o = eff.overridden_by
                if o is not None:
                    out[(dataset_id, episode, criterion)] = HumanLabel(o.new_score, o.reason, o.reviewer, o.created_at)
    return out
