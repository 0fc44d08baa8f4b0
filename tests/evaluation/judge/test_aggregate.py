import pytest

from evaluation.episode_score import RouteReason
from evaluation.judge.aggregate import RoutingConfig, aggregate, heuristic_scores
from evaluation.judge.motion_check import ArmMotion, MotionCheck
from evaluation.judge.verdict import CriterionVerdict, Verdict
from evaluation.rubric import load_rubric
from evaluation.vocabulary import HeuristicSignal, RouteCode
from robot.joints import Side

RUBRIC = load_rubric()


def _verdict(r1: float, r2: float, r3: float, uncertain: str = "", confidence: str = "high") -> Verdict:
    return Verdict(
        tuple(
            CriterionVerdict(cid, (), (f"overhead@{i}.00s",), score, confidence, cid == uncertain)
            for i, (cid, score) in enumerate(zip(RUBRIC.criterion_ids, (r1, r2, r3), strict=True))
        )
    )


def _motion(grasp: float = 1.0, cycle: float = 1.0, push: float = 1.0, did_nothing: bool = False) -> MotionCheck:
    arm = ArmMotion(Side.LEFT, 10.0, 10.0, 1.0, 1, 1, not did_nothing)
    signals = (
        (HeuristicSignal.GRASP_WITH_MOTION, grasp),
        (HeuristicSignal.GRASP_RELEASE_CYCLE, cycle),
        (HeuristicSignal.MOTION_AFTER_RELEASE, push),
    )
    return MotionCheck((arm, arm), did_nothing, signals)


def _codes(score, criterion: str) -> set[str]:
    c = next(c for c in score.criteria if c.criterion == criterion)
    return {r.code for r in c.reasons}


def test_median_mean_and_agreement():
    samples = [_verdict(1, 1, 0.5), _verdict(1, 0.5, 1), _verdict(1, 1, 0.5), _verdict(1, 1, 0), _verdict(1, 1, 0.5)]
    result = aggregate(samples, RUBRIC, _motion(), RoutingConfig())
    r1, r2, r3 = result.criteria
    assert (r1.score, r1.mean, r1.agreement) == (1.0, 1.0, 1.0)
    assert (r2.score, r2.mean, r2.agreement) == (1.0, pytest.approx(0.9), pytest.approx(0.8))
    assert (r3.score, r3.mean, r3.agreement) == (0.5, pytest.approx(0.5), pytest.approx(0.6))
    assert result.total == 2.5
    assert not r1.routed
    assert not r2.routed
    assert _codes(result, "R3") == {"low_agreement"}


def test_even_sample_counts_stay_on_the_scale():
    result = aggregate([_verdict(0, 0, 0), _verdict(1, 1, 0.5)], RUBRIC, _motion(0, 0, 0), RoutingConfig())
    assert [c.score for c in result.criteria] == [0.0, 0.0, 0.0]  # lower median of {0, 1} and {0, 0.5}


def test_failed_samples_are_counted_and_routed():
    result = aggregate([_verdict(1, 1, 1), None, _verdict(1, 1, 1)], RUBRIC, _motion(), RoutingConfig())
    r1 = result.criteria[0]
    assert (r1.n_valid, r1.n_samples, r1.score) == (2, 3, 1.0)
    assert _codes(result, "R1") == {"missing_samples"}
    failed = aggregate([None, None], RUBRIC, _motion(), RoutingConfig())
    assert failed.status == "failed"
    assert failed.total is None


def test_uncertainty_and_low_confidence_route():
    uncertain = aggregate(
        [_verdict(1, 1, 0, uncertain="R3")] + [_verdict(1, 1, 0)] * 2, RUBRIC, _motion(push=0), RoutingConfig()
    )
    assert _codes(uncertain, "R3") == {"judge_uncertain"}
    low = aggregate([_verdict(1, 1, 0, confidence="low")] * 3, RUBRIC, _motion(push=0), RoutingConfig())
    assert _codes(low, "R1") == {"low_confidence"}
    quiet = aggregate(
        [_verdict(1, 1, 0, confidence="low")] * 3, RUBRIC, _motion(push=0), RoutingConfig(route_low_confidence=False)
    )
    assert not quiet.routed


def test_heuristic_conflicts_both_ways_and_did_nothing():
    # The R3 failure mode: motion shows a push, the judge says 0 (0 vs 1 is a conflict).
    missed_push = aggregate([_verdict(1, 1, 0)] * 3, RUBRIC, _motion(push=1.0), RoutingConfig())
    assert _codes(missed_push, "R3") == {"heuristic_conflict"}
    # R2's heuristic is capped at 0.5 by the rubric: a judged 0 is no conflict, a judged 1 without any grasp is.
    assert not aggregate([_verdict(1, 0, 1)] * 3, RUBRIC, _motion(), RoutingConfig()).routed
    idle = aggregate([_verdict(1, 1, 0)] * 3, RUBRIC, _motion(0, 0, 0, did_nothing=True), RoutingConfig())
    assert _codes(idle, "R1") == {"heuristic_conflict", "did_nothing"}
    assert _codes(idle, "R2") == {"heuristic_conflict", "did_nothing"}
    strict = aggregate([_verdict(1, 0.5, 1)] * 3, RUBRIC, _motion(0.5, 0.5, 0.5), RoutingConfig(conflict_threshold=0.5))
    assert {r.criterion for r in strict.reasons} == {"R1", "R3"}


def test_route_codes_are_one_closed_vocabulary():
    assert RouteReason("low_agreement", "R3", "3/5 agree").code is RouteCode.LOW_AGREEMENT
    with pytest.raises(ValueError, match="made_up"):
        RouteReason("made_up", "", "")
    everything = [
        aggregate(
            [_verdict(1, 1, 0, uncertain="R2", confidence="low"), None, _verdict(0, 1, 1)],
            RUBRIC,
            _motion(0, 0, 0, did_nothing=True),
            RoutingConfig(),
        ),
        heuristic_scores(RUBRIC, _motion(did_nothing=True)),
        heuristic_scores(RUBRIC, _motion()),
    ]
    codes = {r["code"] for result in everything for r in (x.to_dict() for x in result.reasons)}
    assert codes <= {c.value for c in RouteCode}
    assert {"did_nothing", "idle_arm", "heuristic_blind", "missing_samples", "judge_uncertain"} <= codes


def test_the_heuristic_scores_what_the_motion_shows_and_routes_the_cloth():
    full = heuristic_scores(RUBRIC, _motion())  # grasp with motion, a release, a push: all at full strength
    assert [(c.criterion, c.source, c.score, c.heuristic_score) for c in full.criteria] == [
        ("R1", "heuristic", 1.0, 1.0),
        ("R2", "heuristic", None, 0.5),
        ("R3", "heuristic", None, 1.0),
    ]
    assert (full.total, full.status) == (None, "scored")
    assert {(r.criterion, r.code) for r in full.reasons} == {
        ("R2", RouteCode.HEURISTIC_BLIND),
        ("R3", RouteCode.HEURISTIC_BLIND),
    }
    nothing = heuristic_scores(RUBRIC, _motion(0, 0, 0))  # arms moved, no grasp: no fold, no push can follow
    assert ([c.score for c in nothing.criteria], nothing.routed) == ([0.0, 0.0, 0.0], False)


def test_a_judge_crediting_arms_that_never_moved_is_routed():
    # Both arms idle, their grippers closed in place (as _motion(did_nothing=True) records them).
    idle = _motion(0, 0, 0, did_nothing=True)
    result = aggregate([_verdict(0.5, 0, 0)] * 3, RUBRIC, idle, RoutingConfig())
    assert {(r.criterion, r.code) for r in result.reasons} == {("R1", RouteCode.DID_NOTHING)}
    assert result.reasons[0].detail == "no arm left its start pose, but R1 = 0.5"
    scored = heuristic_scores(RUBRIC, idle)
    assert [c.score for c in scored.criteria] == [0.0, 0.0, 0.0]
    assert [(r.criterion, r.code) for r in scored.reasons] == [("", RouteCode.IDLE_ARM)] * 2
