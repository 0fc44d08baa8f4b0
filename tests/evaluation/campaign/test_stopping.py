"""The stopping rule on scripted per-episode totals: a clear difference stops early, equal policies run on."""

import random

import pytest

from evaluation.campaign.order import plan_rounds
from evaluation.campaign.stopping import StoppingRule, Verdict, planned_looks

GOOD = [3.0, 2.5, 3.0, 2.5, 3.0, 3.0, 2.5, 3.0, 2.5, 3.0]
POOR = [0.5, 0.0, 1.0, 0.5, 0.0, 0.5, 1.0, 0.0, 0.5, 0.5]


def _run(rule: StoppingRule, first: list[float], second: list[float], looks_at: list[int]) -> tuple[int, Verdict]:
    """Look after each count in `looks_at` (episodes per policy); the count and verdict the campaign ends on."""
    for i, n in enumerate(looks_at):
        decision = rule.decide(first[:n], second[:n], at_maximum=i == len(looks_at) - 1)
        if decision.verdict.stops:
            return n, decision.verdict
    raise AssertionError("the last look must stop")


def test_a_clear_difference_stops_at_the_first_look_the_minimum_allows():
    rule = StoppingRule(planned_looks=4, min_episodes=4, bounds=(0, 3))
    assert _run(rule, GOOD, POOR, [2, 4, 6, 8, 10]) == (4, Verdict.SIGNIFICANT)


def test_the_minimum_is_respected_even_when_two_episodes_already_differ():
    rule = StoppingRule(planned_looks=4, min_episodes=6, bounds=(0, 3))
    early = rule.decide(GOOD[:4], POOR[:4], at_maximum=False)
    assert early.verdict is Verdict.CONTINUE
    assert "may stop from 6" in early.reason
    assert early.difference.low is not None
    assert early.difference.low > 0
    assert _run(rule, GOOD, POOR, [2, 4, 6, 8, 10]) == (6, Verdict.SIGNIFICANT)


def test_equal_policies_run_to_the_maximum():
    rng = random.Random(1)
    a = [rng.choice([0.5, 1.0, 1.5, 2.0, 2.5]) for _ in range(10)]
    b = [rng.choice([0.5, 1.0, 1.5, 2.0, 2.5]) for _ in range(10)]
    rule = StoppingRule(planned_looks=4, min_episodes=4, bounds=(0, 3))
    assert _run(rule, a, b, [2, 4, 6, 8, 10]) == (10, Verdict.MAXIMUM)


def test_a_difference_at_the_maximum_is_reported_as_significant():
    rule = StoppingRule(planned_looks=1, min_episodes=4)
    assert rule.decide(GOOD, POOR, at_maximum=True).verdict is Verdict.SIGNIFICANT


def test_each_look_is_a_bonferroni_split_of_the_five_percent_unless_turned_off():
    assert StoppingRule(planned_looks=5).confidence == pytest.approx(0.99)
    assert StoppingRule(planned_looks=1).confidence == pytest.approx(0.95)
    assert StoppingRule(planned_looks=5, adjust_for_looks=False).confidence == pytest.approx(0.95)
    # A difference the nominal 95 % interval calls clear, the 99 % one of five looks does not.
    a, b = [2.0, 2.5, 1.5, 2.0, 3.0], [1.5, 1.0, 2.0, 1.0, 1.5]
    assert StoppingRule(planned_looks=5, adjust_for_looks=False).decide(a, b, at_maximum=False).verdict.stops
    assert not StoppingRule(planned_looks=5).decide(a, b, at_maximum=False).verdict.stops


def test_repeated_nominal_looks_stop_equal_policies_more_often_than_split_ones():
    rng = random.Random(0)
    false_stops = {True: 0, False: 0}
    for _ in range(300):
        a = [rng.choice([0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0]) for _ in range(20)]
        b = [rng.choice([0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0]) for _ in range(20)]
        for adjust in (True, False):
            rule = StoppingRule(planned_looks=9, min_episodes=4, adjust_for_looks=adjust, bounds=(0, 3))
            false_stops[adjust] += _run(rule, a, b, list(range(4, 21, 2)))[1] is Verdict.SIGNIFICANT
    assert false_stops[True] / 300 <= 0.05
    assert false_stops[False] > false_stops[True]


def test_constant_policies_give_no_interval_and_do_not_stop_on_it():
    decision = StoppingRule(planned_looks=2).decide([3.0] * 6, [0.0] * 6, at_maximum=False)
    assert decision.verdict is Verdict.CONTINUE
    assert "do not vary" in decision.reason


def test_planned_looks_count_whole_rounds_from_the_minimum_on():
    rounds = plan_rounds(("A", "B"), 10, 1, 0)  # 5 rounds, 2 episodes each per round
    assert planned_looks(rounds, ("A", "B"), 4) == 4  # after rounds 2, 3, 4, 5
    assert planned_looks(rounds, ("A", "B"), 20) == 1  # never enough: the last round is still a look
