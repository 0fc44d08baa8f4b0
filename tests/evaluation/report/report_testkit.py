"""Helpers of the report tests: populate a real evaluation store through its own API (no hand-written SQL)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from evaluation.episode_score import CriterionScore, EpisodeScore
from evaluation.overrides import OverrideStore
from evaluation.report.scores import Cell, EpisodeScores, HumanLabel, PolicyScores
from evaluation.rubric import Rubric, load_rubric, parse_rubric
from evaluation.store import EvaluationStore, RunRecord
from evaluation.vocabulary import ScoreSource

RUBRIC = load_rubric()
CRITERIA = RUBRIC.criterion_ids  # ("R1", "R2", "R3")


def add_run(
    store: EvaluationStore,
    dataset_id: str,
    tag: str,
    episodes: Mapping[int, Sequence[float | None]],
    scorer: str = "llm",
    model: str = "claude-sonnet-5-5",
    rubric: Rubric = RUBRIC,
) -> str:
    """Record one judge run whose episodes got the given labels (one per criterion of `rubric`); returns the run id."""
    run_id = uuid.uuid4().hex
    store.start_run(
        RunRecord(
            run_id=run_id,
            scorer=scorer,
            config_hash=f"cfg-{tag}",
            config={},
            model=model,
            prompt_hash="p",
            rubric_version=rubric.version,
            rubric=rubric.to_dict(),
            dataset_id=dataset_id,
            dataset_root=f"/data/{dataset_id}",
            dataset_revision="rev",
            tag=tag,
            mode="sync",
            forced=False,
            sdk_version="",
        )
    )
    for index, labels in episodes.items():
        criteria = tuple(
            CriterionScore(cid, "judge" if scorer == "llm" else "heuristic", s, s, 1.0, 1, 1, False, None, (), ())
            for cid, s in zip(rubric.criterion_ids, labels, strict=True)
        )
        result = EpisodeScore(criteria, "scored", ())
        store.record_episode(run_id, f"cfg-{tag}", dataset_id, index, f"fp{index}", result, {}, 1, 0.0)
    store.add_run_event(run_id, "finished", {})
    return run_id


def two_criterion_rubric() -> Rubric:
    """The default rubric without R3."""
    doc = RUBRIC.to_dict()
    doc["criteria"] = doc["criteria"][:2]
    return parse_rubric(doc)


def add_override(
    path: Path,
    dataset_id: str,
    episode: int,
    criterion: str,
    score: float,
    reason: str = "view_ambiguous",
    reviewer: str = "ana",
) -> None:
    """Append a human override through the review store's API."""
    with EvaluationStore(path) as store, OverrideStore(store) as overrides:
        overrides.record(dataset_id, episode, criterion, score, reason, "", reviewer, None)


def policy_scores(
    name: str,
    rows: Sequence[Sequence[float | None]],
    humans: Mapping[tuple[int, str], float] | None = None,
    dataset_id: str = "fold",
) -> PolicyScores:
    """In-memory scores of a policy: judge labels per episode (R1, R2, R3) and human labels by (episode, criterion)."""
    humans = humans or {}
    criteria = tuple((c.id, c.name) for c in RUBRIC.criteria)
    episodes = []
    for i, row in enumerate(rows):
        cells = tuple(
            Cell(cid, s, None if (i, cid) not in humans else HumanLabel(humans[(i, cid)], "view_ambiguous", "ana", "t"))
            for (cid, _), s in zip(criteria, row, strict=True)
        )
        episodes.append(EpisodeScores(dataset_id, i, cells, any(h[0] == i for h in humans)))
    return PolicyScores(name, "test", "s.sqlite", (dataset_id,), "llm", ("m",), ("v",), criteria, tuple(episodes), 0)


def add_truth(
    store: EvaluationStore,
    dataset_id: str,
    episodes: Mapping[int, Sequence[float]],
    trimmed: Sequence[int] = (),
) -> str:
    """Record a run of scorer "truth" (as so101-judge --scorer=truth stores it) on episodes "fp<index>"; its run id."""
    run_id = uuid.uuid4().hex
    store.start_run(
        RunRecord(
            run_id=run_id,
            scorer="truth",
            config_hash="cfg-truth",
            config={},
            model="cloth_truth@1",
            prompt_hash="",
            rubric_version=RUBRIC.version,
            rubric=RUBRIC.to_dict(),
            dataset_id=dataset_id,
            dataset_root=f"/data/{dataset_id}",
            dataset_revision="rev",
            tag="",
            mode="offline",
            forced=False,
            sdk_version="",
        )
    )
    for index, values in episodes.items():
        criteria = tuple(
            CriterionScore(cid, ScoreSource.TRUTH, v, v, None, 1, 1, False, None, (), ())
            for cid, v in zip(CRITERIA, values, strict=True)
        )
        saved = {"definition": "cloth_truth@1", "seed": index} | ({"trimmed_from": {}} if index in trimmed else {})
        store.record_episode(
            run_id, "cfg-truth", dataset_id, index, f"fp{index}", EpisodeScore(criteria, "scored", ()), saved, 0, 0.0
        )
    store.add_run_event(run_id, "finished", {})
    return run_id
