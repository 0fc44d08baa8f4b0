"""Load one policy's scores from an evaluation store: judge labels, and the latest human overrides.

Selection: scored episode results of the runs that match the policy (tag and/or dataset), from one
scorer (`auto`: the LLM judge's when the selection has any, else the motion heuristic's), and per
episode the newest of them made on the episode as it is now (evaluation.currency). Virtual ground
truth (scorer "truth", evaluation/truth.py) is never the scorer: it is read from the same store,
whatever the policy's tag, and sits beside each cell as the reference. Overrides come
from `evaluation.overrides` (latest current one by id); an episode counts as reviewed when it has at
least one, a "confirmed" one included, and so does an operator's live score (reason "live", taken in
from beside the dataset when the report opens it: evaluation/live_labels.py).

What an episode is now comes from the dataset: the policy's `dataset_root`, else the folder the
newest judge run of that dataset recorded. A result of an episode that was deleted or changed since
is stale and left out; so is an override made before its episode changed. When the folder is not
there, the newest fingerprint on record stands in (a deletion cannot be seen then), and the policy's
`source` says its results were not checked against the dataset. The counts are in `Currency`, and
in words in `PolicyScores.source` (the report's policies table and its JSON "source").
"""

from __future__ import annotations

import json
import logging
import shlex
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from evaluation.carry import carry_scores
from evaluation.currency import ResultRef, StaleResult, describe_stale, episodes_now, episodes_on_record, select_current
from evaluation.episode_source import open_dataset
from evaluation.errors import DatasetReadError, StoreError
from evaluation.live_labels import import_live_scores
from evaluation.overrides import effective_scores
from evaluation.report.config import PolicySpec
from evaluation.report.errors import MissingStoreError, NoScoresError, ReportError, UnknownTagError
from evaluation.report.scores import Cell, EpisodeScores, HumanLabel, PolicyScores
from evaluation.store import EvaluationStore
from evaluation.truth import NOT_TRUTH, TruthRecord, current_truth
from teleop.dataset.lineage import LINEAGE_FILE
from teleop.dataset.live_scores import live_score_paths

log = logging.getLogger(__name__)

_RESULTS = (
    "SELECT e.id AS result_id, e.dataset_id, e.episode_index, e.episode_fingerprint, r.scorer, r.model,"
    " r.rubric_version, r.rubric_json FROM episode_results e JOIN runs r ON r.run_id = e.run_id"
    f" WHERE e.status = 'scored' AND e.{NOT_TRUTH}"  # truth is the reference, read apart (current_truth)
)
_CHUNK = 500  # result ids per IN (...) query


@dataclass(frozen=True)
class DatasetNow:
    """What one dataset's episodes are now, and where that was learnt."""

    dataset_id: str  # dataset name in the store
    fingerprints: Mapping[int, str]  # episode index -> fingerprint now
    checked_against: Path | None  # the dataset folder the fingerprints were computed from; None: from the store
    why_not: str = ""  # when not checked against the dataset: why (e.g. "/data/fold not found")


@dataclass(frozen=True)
class Currency:
    """What a policy's figures left out because it was made on another version of its episode."""

    datasets: tuple[DatasetNow, ...]  # per dataset of the selection
    stale_results: tuple[tuple[str, StaleResult], ...]  # (dataset id, result) per episode without a current result
    stale_overrides: int  # override cells of counted episodes whose latest override is stale (not applied)

    def describe(self) -> str:
        """The policy's currency in words, for its `source` line."""
        parts = []
        checked = [str(d.checked_against) for d in self.datasets if d.checked_against is not None]
        if checked:
            parts.append(f"checked against the dataset {', '.join(checked)}")
        for d in self.datasets:
            if d.checked_against is None:
                parts.append(
                    f"{d.dataset_id!r} not checked against its dataset ({d.why_not}; pass --datasets=<folder>): "
                    f"stale means judged before the newest recorded version of the episode"
                )
        if self.stale_results:
            n = len(self.stale_results)
            by_dataset = "; ".join(
                f"{d}: {describe_stale(s for ds, s in self.stale_results if ds == d)}"
                for d in sorted({ds for ds, _ in self.stale_results})
            )
            parts.append(f"{n} stale result{'' if n == 1 else 's'} left out ({by_dataset})")
        if self.stale_overrides:
            m = self.stale_overrides
            parts.append(f"{m} stale override{'' if m == 1 else 's'} not applied (made before the episode changed)")
        return "; ".join(parts)


def load_policy(spec: PolicySpec, scorer: str = "auto") -> PolicyScores:
    """Read a policy's scores (see `load_policy_with_currency` for what was left out)."""
    return load_policy_with_currency(spec, scorer)[0]


def load_policy_with_currency(spec: PolicySpec, scorer: str = "auto") -> tuple[PolicyScores, Currency]:
    """Read a policy's current scores, and what was left out as stale.

    Raises:
        MissingStoreError: No store file at the policy's store path.
        UnknownTagError: No run in the store has the policy's tag.
        NoScoresError: The selection holds no scored episode (of the requested scorer), or every one is stale.
        ReportError: The episodes were judged against rubrics with different criteria.
        StoreError: The store cannot be read.
    """
    path = spec.resolved_store()
    _carry(spec, path)
    _import_live(spec, path)
    if not path.is_file():
        hint = (
            f"score it first: so101-judge {shlex.quote(f'--dataset.root={spec.dataset_root}')} (without an API key or"
            f" videos, add --scorer=heuristic: it scores the joints alone; cameras with other names: add"
            f" --dataset.views=overhead:<camera>)"
            if spec.dataset_root is not None
            else "check --store_path"
        )
        raise MissingStoreError(f"policy {spec.label()!r}: no evaluation store at {path}; {hint}")
    with EvaluationStore(path) as store:
        return _load(store, spec, scorer, path)


def _carry(spec: PolicySpec, path: Path) -> None:
    """A curated dataset's scores follow its whole episodes from its sources' stores (evaluation/carry.py)."""
    root = spec.dataset_root
    if root is None or not (root.expanduser() / LINEAGE_FILE).is_file():
        return
    source = open_dataset(root.expanduser(), spec.resolved_dataset_id() or None)
    for line in carry_scores(source, path).lines():
        log.info("%s: %s", spec.label(), line)


def _import_live(spec: PolicySpec, path: Path) -> None:
    """The operator's scores typed during the rollouts become human labels (evaluation/live_labels.py)."""
    root = spec.dataset_root
    if root is None or not path.is_file() or not live_score_paths(root.expanduser()):
        return  # without a store the report stops below; so101-judge takes them in when it starts one
    source = open_dataset(root.expanduser(), spec.resolved_dataset_id() or None)
    for line in import_live_scores(source, path).lines():
        log.info("%s: %s", spec.label(), line)


def _load(store: EvaluationStore, spec: PolicySpec, scorer: str, path: Path) -> tuple[PolicyScores, Currency]:
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
    nows = {d: _dataset_now(store, spec, d) for d in sorted({r["dataset_id"] for r in rows})}
    by_id = {int(r["result_id"]): r for r in rows}
    latest: dict[tuple[str, int], sqlite3.Row] = {}
    current_any: set[tuple[str, int]] = set()  # episodes with a current result of any scorer
    stale: list[tuple[str, StaleResult]] = []
    for d, now in nows.items():
        chosen_now = select_current(_refs(kept, d), now.fingerprints)
        latest.update({(d, i): by_id[ref.result_id] for i, ref in chosen_now.current.items()})
        stale += [(d, s) for s in chosen_now.stale]
        current_any |= {(d, i) for i in select_current(_refs(rows, d), now.fingerprints).current}
    left_out = len(current_any - latest.keys())
    if not latest:
        detail = "; ".join(f"{d}: {describe_stale(s for ds, s in stale if ds == d)}" for d in nows)
        raise NoScoresError(
            f"policy {spec.label()!r}: every scored episode of {where} is stale ({detail}): deleted or changed since "
            f"it was judged; judge the dataset again with so101-judge --dataset.root=<folder>"
        )
    chosen_rows = [latest[k] for k in sorted(latest)]
    criteria = _criteria(chosen_rows, spec)
    scores = _scores(store, [r["result_id"] for r in chosen_rows])
    humans, stale_overrides = _human_labels(store, {d: nows[d] for d in sorted({k[0] for k in latest})}, latest)
    currency = Currency(tuple(nows.values()), tuple(stale), stale_overrides)
    reviewed_keys = {k[:2] for k in humans}
    truths = _truths(store, {d: nows[d] for d in sorted({k[0] for k in latest})})
    episodes = []
    for r in chosen_rows:
        key = (r["dataset_id"], int(r["episode_index"]))
        truth = truths.get(key)
        cells = tuple(
            Cell(
                cid,
                scores.get((r["result_id"], cid)),
                humans.get((*key, cid)),
                None if truth is None else truth.scores.get(cid),
            )
            for cid, _ in criteria
        )
        whole = truth is not None and truth.whole_recording
        episodes.append(EpisodeScores(key[0], key[1], cells, key in reviewed_keys, whole))
    scores_out = PolicyScores(
        name=spec.label(),
        source="; ".join(p for p in (where, currency.describe()) if p),
        store_path=str(path),
        dataset_ids=tuple(sorted({r["dataset_id"] for r in chosen_rows})),
        scorer=chosen,
        models=tuple(sorted({r["model"] for r in chosen_rows})),
        rubric_versions=tuple(sorted({r["rubric_version"] for r in chosen_rows})),
        criteria=criteria,
        episodes=tuple(episodes),
        left_out=left_out,
        truth_definitions=tuple(sorted({t.definition for t in truths.values()})),
    )
    return scores_out, currency


def _truths(store: EvaluationStore, nows: Mapping[str, DatasetNow]) -> dict[tuple[str, int], TruthRecord]:
    """Virtual ground truth of the episodes as they are now (made on another version: left out, as results are)."""
    return {(d, i): t for d, now in nows.items() for i, t in current_truth(store, d, now.fingerprints).items()}


def _refs(rows: list[sqlite3.Row], dataset_id: str) -> list[ResultRef]:
    return [
        ResultRef(int(r["result_id"]), int(r["episode_index"]), r["episode_fingerprint"])
        for r in rows
        if r["dataset_id"] == dataset_id
    ]


def _dataset_now(store: EvaluationStore, spec: PolicySpec, dataset_id: str) -> DatasetNow:
    """The episodes of a dataset now: from its folder when it can be read, else from the store's records."""
    root = spec.dataset_root if spec.dataset_root is not None and spec.resolved_dataset_id() == dataset_id else None
    if root is None:
        recorded = store.query(
            "SELECT dataset_root FROM runs WHERE dataset_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1",
            (dataset_id,),
        )
        root = Path(recorded[0]["dataset_root"]) if recorded else None
    if root is None:
        why = "no folder on record"
    elif not (root.expanduser() / "meta" / "info.json").is_file():
        why = f"{root} not found"
    else:
        try:
            source = open_dataset(root, dataset_id)
            return DatasetNow(dataset_id, episodes_now(source), source.root)
        except DatasetReadError as e:
            why = f"{root} cannot be read: {e}"
    return DatasetNow(dataset_id, episodes_on_record(store, dataset_id), None, why)


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


def _human_labels(
    store: EvaluationStore, nows: Mapping[str, DatasetNow], counted: Mapping[tuple[str, int], object]
) -> tuple[dict[tuple[str, int, str], HumanLabel], int]:
    """The latest current override per cell, and how many counted cells have only a stale one on top."""
    out: dict[tuple[str, int, str], HumanLabel] = {}
    stale = 0
    for dataset_id, now in nows.items():
        for episode, by_criterion in effective_scores(store, dataset_id, now.fingerprints).items():
            for criterion, eff in by_criterion.items():
                o = eff.overridden_by
                if o is not None:
                    out[(dataset_id, episode, criterion)] = HumanLabel(o.new_score, o.reason, o.reviewer, o.created_at)
                if eff.stale and (dataset_id, episode) in counted:
                    stale += 1
    return out, stale
