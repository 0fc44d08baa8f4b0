"""The scored result of one episode: per-criterion scores and the reasons a person should look.

What the judge (or the offline heuristic) hands the store, and what the store, the review page and
the report read back. Built by `evaluation.judge.aggregate`; kept here, in the shared core, because
the store records it and nothing in the core may import the judge.
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluation.vocabulary import RouteCode, ScoreSource


@dataclass(frozen=True)
class RouteReason:
    """Why a criterion or episode needs a person."""

    code: RouteCode  # why (a closed set: see RouteCode)
    criterion: str  # criterion id, or "" for the whole episode
    detail: str  # readable explanation

    def __post_init__(self) -> None:
        """Hold the code as a RouteCode (a plain string is converted; an unknown one raises ValueError)."""
        object.__setattr__(self, "code", RouteCode(self.code))

    def to_dict(self) -> dict[str, str]:
        """JSON-serialisable form."""
        return {"code": self.code.value, "criterion": self.criterion, "detail": self.detail}


@dataclass(frozen=True)
class CriterionScore:
    """Aggregated score of one criterion."""

    criterion: str  # id, e.g. "R3"
    source: ScoreSource  # who scored it: the judge or the heuristic
    score: float | None  # label: median of the valid samples (None when no sample is valid)
    mean: float | None  # soft score: mean of the valid samples
    agreement: float | None  # fraction of valid samples equal to the label
    n_valid: int  # valid samples
    n_samples: int  # samples requested
    uncertain: bool  # any sample said uncertain
    heuristic_score: float | None  # the motion heuristic's score for this criterion
    evidence_frames: tuple[str, ...]  # frames cited by the samples that agree with the label
    reasons: tuple[RouteReason, ...]  # why this criterion is routed (empty: not routed)

    @property
    def routed(self) -> bool:
        """Whether a person should review this criterion."""
        return bool(self.reasons)


@dataclass(frozen=True)
class EpisodeScore:
    """Aggregated result of one episode."""

    criteria: tuple[CriterionScore, ...]  # in rubric order
    status: str  # "scored" or "failed" (no valid sample at all)
    reasons: tuple[RouteReason, ...]  # all reasons, criterion and episode level

    @property
    def total(self) -> float | None:
        """Sum of the labels (None when any criterion has none)."""
        labels = [c.score for c in self.criteria if c.score is not None]
        return float(sum(labels)) if self.criteria and len(labels) == len(self.criteria) else None

    @property
    def routed(self) -> bool:
        """Whether a person should review the episode."""
        return bool(self.reasons)
