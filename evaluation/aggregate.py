"""Aggregate K judge samples per criterion and decide which episodes a person should review.

Per criterion: the label is the median of the valid samples (lower median for an even count, so it
stays on the 0/0.5/1 scale), the soft score is their mean, and agreement is the fraction of samples
equal to the label. An episode is routed to review when agreement is low, the judge says it is
unsure, samples failed, or the motion heuristic disagrees.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from evaluation.config_checks import reject_non_finite
from evaluation.errors import ConfigError
from evaluation.motion_check import MotionCheck
from evaluation.rubric import Rubric
from evaluation.verdict import Verdict


@dataclass(frozen=True)
class RoutingConfig:
    """When an episode goes to human review."""

    min_agreement: float = 0.8  # route a criterion when fewer samples than this fraction agree with the label
    conflict_threshold: float = 1.0  # route when |judge - heuristic| reaches this (0..1 scale)
    route_low_confidence: bool = True  # route when most samples say confidence "low"

    def __post_init__(self) -> None:
        """Validate the fields."""
        reject_non_finite(self, "routing")
        if not 0 <= self.min_agreement <= 1:
            raise ConfigError(f"routing.min_agreement={self.min_agreement}; allowed: 0..1")
        if not 0 < self.conflict_threshold <= 1:
            raise ConfigError(f"routing.conflict_threshold={self.conflict_threshold}; allowed: 0 < x <= 1")


@dataclass(frozen=True)
class RouteReason:
    """Why a criterion or episode needs a person."""

    code: str  # low_agreement, judge_uncertain, low_confidence, heuristic_conflict, did_nothing, missing_samples
    criterion: str  # criterion id, or "" for the whole episode
    detail: str  # readable explanation

    def to_dict(self) -> dict[str, str]:
        """JSON-serialisable form."""
        return {"code": self.code, "criterion": self.criterion, "detail": self.detail}


@dataclass(frozen=True)
class CriterionScore:
    """Aggregated score of one criterion."""

    criterion: str  # id, e.g. "R3"
    source: str  # "judge" or "heuristic"
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


def aggregate(
    verdicts: Sequence[Verdict | None], rubric: Rubric, motion: MotionCheck, routing: RoutingConfig
) -> EpisodeScore:
    """Combine the samples of one episode (None marks a failed or invalid sample)."""
    valid = [v for v in verdicts if v is not None]
    n = len(verdicts)
    criteria: list[CriterionScore] = []
    for c in rubric.criteria:
        scores = [v.get(c.id).score for v in valid]
        heuristic = motion.score(c)
        reasons: list[RouteReason] = []
        if not scores:
            criteria.append(CriterionScore(c.id, "judge", None, None, None, 0, n, False, heuristic, (), ()))
            continue
        label = statistics.median_low(scores)
        agreeing = [v.get(c.id) for v in valid if v.get(c.id).score == label]
        agreement = len(agreeing) / len(scores)
        uncertain = any(v.get(c.id).uncertain for v in valid)
        low_conf = sum(v.get(c.id).confidence == "low" for v in valid) > len(valid) / 2
        if agreement < routing.min_agreement:
            reasons.append(
                RouteReason("low_agreement", c.id, f"{len(agreeing)}/{len(scores)} samples agree on {label:g}")
            )
        if uncertain:
            reasons.append(RouteReason("judge_uncertain", c.id, "the judge marked the evidence as insufficient"))
        elif low_conf and routing.route_low_confidence:
            reasons.append(RouteReason("low_confidence", c.id, "most samples report low confidence"))
        if len(scores) < n:
            reasons.append(RouteReason("missing_samples", c.id, f"{n - len(scores)} of {n} samples failed"))
        if heuristic is not None and abs(label - heuristic) >= routing.conflict_threshold:
            reasons.append(RouteReason("heuristic_conflict", c.id, f"judge {label:g}, motion heuristic {heuristic:g}"))
        if motion.did_nothing and label > 0:
            reasons.append(
                RouteReason("did_nothing", c.id, f"no arm moved and no gripper closed, but {c.id} = {label:g}")
            )
        evidence = tuple(dict.fromkeys(ref for v in agreeing for ref in v.evidence_frames))
        criteria.append(
            CriterionScore(
                c.id, "judge", float(label), float(statistics.fmean(scores)), agreement, len(scores), n, uncertain,
                heuristic, evidence, tuple(reasons),
            )
        )  # fmt: skip
    status = "scored" if valid else "failed"
    all_reasons = tuple(r for c in criteria for r in c.reasons)
    return EpisodeScore(tuple(criteria), status, all_reasons)


def heuristic_scores(rubric: Rubric, motion: MotionCheck) -> EpisodeScore:
    """Offline scores from the motion heuristic only (labelled source "heuristic"; it never sees the cloth)."""
    criteria = []
    for c in rubric.criteria:
        h = motion.score(c)
        criteria.append(
            CriterionScore(
                c.id, "heuristic", h, h, 1.0 if h is not None else None, 1 if h is not None else 0, 1, False, h, (), ()
            )
        )
    return EpisodeScore(tuple(criteria), "scored", ())
