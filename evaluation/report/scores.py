"""The scores a report is computed from: per policy, per episode, per criterion, judge and human.

A cell holds the judge's label (the median of its samples, from the latest scored result of the
episode), the latest human override, if any, and the virtual ground truth where the episode was
recorded on the virtual rig (a reference only: it is never an effective score). The effective
score is the override when there is one, else the judge's label; the judge's record itself never changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class View(StrEnum):
    """Which scores a figure is computed from."""

    JUDGE = "judge"  # the judge's labels only
    EFFECTIVE = "effective"  # human-adjusted: latest override, else the judge


@dataclass(frozen=True)
class HumanLabel:
    """The latest override of one criterion of one episode."""

    score: float  # the reviewer's score (0, 0.5 or 1)
    reason: str  # reason code given with the override
    reviewer: str  # who made it
    created_at: str  # when (ISO 8601, UTC)


@dataclass(frozen=True)
class Cell:
    """One criterion of one episode."""

    criterion: str  # criterion id, e.g. "R3"
    judge: float | None  # the judge's label (None: no valid sample)
    human: HumanLabel | None  # latest override (None: not overridden)
    truth: float | None = None  # virtual ground truth, continuous 0..1 (None: not recorded on the virtual rig)

    @property
    def effective(self) -> float | None:
        """Latest override, else the judge's label."""
        return self.human.score if self.human is not None else self.judge

    def score(self, view: View) -> float | None:
        """The cell's score in a view."""
        return self.judge if view is View.JUDGE else self.effective


@dataclass(frozen=True)
class EpisodeScores:
    """All criteria of one episode."""

    dataset_id: str  # dataset the episode belongs to
    episode_index: int  # episode index in that dataset
    cells: tuple[Cell, ...]  # in rubric order
    reviewed: bool  # a person reviewed the episode (see load.py for what counts)
    truth_of_whole_recording: bool = False  # trimmed after recording: its truth describes the whole recording

    def total(self, view: View) -> float | None:
        """Sum of the criterion scores (None when any criterion has none)."""
        values = [c.score(view) for c in self.cells]
        return None if any(v is None for v in values) else float(sum(values))  # type: ignore[arg-type]

    @property
    def overridden(self) -> bool:
        """Whether a person overrode at least one criterion of the episode."""
        return any(c.human is not None for c in self.cells)

    def label(self, with_dataset: bool) -> str:
        """Row label in tables and the heatmap."""
        return f"{self.dataset_id} #{self.episode_index}" if with_dataset else f"#{self.episode_index}"


@dataclass(frozen=True)
class PolicyScores:
    """Everything loaded for one policy."""

    name: str  # label in the report
    source: str  # where the scores came from, in words
    store_path: str  # evaluation store file
    dataset_ids: tuple[str, ...]  # datasets the episodes belong to
    scorer: str  # "llm" or "heuristic"
    models: tuple[str, ...]  # judge models of the results used
    rubric_versions: tuple[str, ...]  # rubric versions of the results used
    criteria: tuple[tuple[str, str], ...]  # (id, name) in rubric order
    episodes: tuple[EpisodeScores, ...]  # sorted by dataset, then episode index
    left_out: int  # scored episodes left out because another scorer's results were used
    truth_definitions: tuple[str, ...] = ()  # definitions of the virtual ground truth beside the cells (none: no truth)

    @property
    def has_truth(self) -> bool:
        """Whether any cell has virtual ground truth beside it."""
        return any(c.truth is not None for e in self.episodes for c in e.cells)

    @property
    def criterion_ids(self) -> tuple[str, ...]:
        """Criterion ids in rubric order."""
        return tuple(c for c, _ in self.criteria)

    def values(self, criterion: str, view: View) -> list[float]:
        """The criterion's scores over the episodes that have one."""
        i = self.criterion_ids.index(criterion)
        return [s for e in self.episodes if (s := e.cells[i].score(view)) is not None]

    def totals(self, view: View) -> list[float]:
        """Episode totals over the episodes where every criterion has a score."""
        return [t for e in self.episodes if (t := e.total(view)) is not None]
