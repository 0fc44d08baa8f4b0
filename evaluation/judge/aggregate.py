"""Aggregate K judge samples per criterion and decide which episodes a person should review.

Per criterion: the label is the median of the valid samples (lower median for an even count, so it
stays on the 0/0.5/1 scale), the soft score is their mean, and agreement is the fraction of samples
equal to the label. An episode is routed to review when agreement is low, the judge says it is
unsure, samples failed, or the motion heuristic disagrees.

The offline heuristic scorer (`heuristic_scores`) reports only what the joint data can show: a
criterion judged on the process gets its motion evidence as the score; a criterion judged on the
cloth's final state gets 0 when the motion rules it out (no grasp, no push) and otherwise no score at
all, routed to a person as `heuristic_blind`. Route codes are `RouteCode` (evaluation.vocabulary).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from evaluation.config_checks import reject_non_finite
from evaluation.episode_score import CriterionScore, EpisodeScore, RouteReason
from evaluation.errors import ConfigError
from evaluation.judge.motion_check import ArmMotion, MotionCheck
from evaluation.judge.verdict import Verdict
from evaluation.rubric import Criterion, Rubric
from evaluation.vocabulary import RouteCode, ScoreSource


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
            criteria.append(CriterionScore(c.id, ScoreSource.JUDGE, None, None, None, 0, n, False, heuristic, (), ()))
            continue
        label = statistics.median_low(scores)
        agreeing = [v.get(c.id) for v in valid if v.get(c.id).score == label]
        agreement = len(agreeing) / len(scores)
        uncertain = any(v.get(c.id).uncertain for v in valid)
        low_conf = sum(v.get(c.id).confidence == "low" for v in valid) > len(valid) / 2
        if agreement < routing.min_agreement:
            reasons.append(
                RouteReason(RouteCode.LOW_AGREEMENT, c.id, f"{len(agreeing)}/{len(scores)} samples agree on {label:g}")
            )
        if uncertain:
            reasons.append(
                RouteReason(RouteCode.JUDGE_UNCERTAIN, c.id, "the judge marked the evidence as insufficient")
            )
        elif low_conf and routing.route_low_confidence:
            reasons.append(RouteReason(RouteCode.LOW_CONFIDENCE, c.id, "most samples report low confidence"))
        if len(scores) < n:
            reasons.append(RouteReason(RouteCode.MISSING_SAMPLES, c.id, f"{n - len(scores)} of {n} samples failed"))
        if heuristic is not None and abs(label - heuristic) >= routing.conflict_threshold:
            reasons.append(
                RouteReason(RouteCode.HEURISTIC_CONFLICT, c.id, f"judge {label:g}, motion heuristic {heuristic:g}")
            )
        if motion.did_nothing and label > 0:
            reasons.append(
                RouteReason(RouteCode.DID_NOTHING, c.id, f"no arm left its start pose, but {c.id} = {label:g}")
            )
        evidence = tuple(dict.fromkeys(ref for v in agreeing for ref in v.evidence_frames))
        criteria.append(
            CriterionScore(
                c.id,
                ScoreSource.JUDGE,
                float(label),
                float(statistics.fmean(scores)),
                agreement,
                len(scores),
                n,
                uncertain,
                heuristic,
                evidence,
                tuple(reasons),
            )
        )
    status = "scored" if valid else "failed"
    all_reasons = tuple(r for c in criteria for r in c.reasons)
    return EpisodeScore(tuple(criteria), status, all_reasons)


def heuristic_scores(rubric: Rubric, motion: MotionCheck) -> EpisodeScore:
    """Offline scores from the motion heuristic only (source "heuristic"); what it cannot see is left to a person.

    Per criterion (see the module docstring): the motion evidence for a process criterion; for a
    final-state criterion 0 when the motion rules it out, else no score and a `heuristic_blind` reason;
    no score and `heuristic_blind` for a criterion without a motion signal. An idle arm whose gripper
    closed routes the episode (`idle_arm`): evidence was set aside and a person should know.
    """
    criteria = []
    for c in rubric.criteria:
        evidence = motion.score(c)
        score, reasons = _heuristic_score(c, evidence)
        criteria.append(
            CriterionScore(
                c.id,
                ScoreSource.HEURISTIC,
                score,
                score,
                None if score is None else 1.0,
                int(score is not None),
                1,
                False,
                evidence,
                (),
                reasons,
            )
        )
    episode = tuple(_idle_arm_reason(a) for a in motion.idle_arms if a.grasps)
    all_reasons = tuple(r for c in criteria for r in c.reasons) + episode
    return EpisodeScore(tuple(criteria), "scored", all_reasons)


def _heuristic_score(criterion: Criterion, evidence: float | None) -> tuple[float | None, tuple[RouteReason, ...]]:
    if evidence is None:
        detail = "the motion heuristic has no signal for this criterion; a person scores it"
        return None, (RouteReason(RouteCode.HEURISTIC_BLIND, criterion.id, detail),)
    if criterion.judge_on == "final_state" and evidence > 0:
        detail = (
            f"{criterion.name} is about the cloth's final state, which the motion heuristic never sees "
            f"(the joints allow up to {evidence:g}); a person scores it"
        )
        return None, (RouteReason(RouteCode.HEURISTIC_BLIND, criterion.id, detail),)
    return evidence, ()  # process evidence, or a final state the motion rules out (0)


def _idle_arm_reason(arm: ArmMotion) -> RouteReason:
    closings = f"{arm.grasps} gripper closing{'s' if arm.grasps != 1 else ''}"
    return RouteReason(
        RouteCode.IDLE_ARM,
        "",
        f"the {arm.side.value} arm never left its start pose (largest excursion {arm.max_excursion_deg:.1f} deg), "
        f"so its {closings} counted for nothing",
    )
