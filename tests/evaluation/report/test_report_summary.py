"""Per-policy figures and comparisons equal known values on a small fixture (judge-only and human-adjusted)."""

import json

import pytest
from scipy import stats

from evaluation.report.comparison import compare
from evaluation.report.config import StatsConfig
from evaluation.report.model import build_report
from evaluation.report.permutation import holm_adjust, permutation_test
from evaluation.report.scores import View
from evaluation.report.summary import summarise
from evaluation.report.tables import comparison_table, criteria_table
from tests.evaluation.report.report_testkit import policy_scores as _policy

CRITERIA = (("R1", "fold initiation"), ("R2", "fold completion"), ("R3", "push aside"))
OPTIONS = StatsConfig(bootstrap_resamples=2000)


SMOLVLA = _policy(
    "smolvla",
    [(1, 1, 0.5), (1, 1, 1), (1, 0.5, 0), (1, 1, 0), (0.5, 0, 0), (1, 1, 1), (1, 1, None)],
    humans={(2, "R3"): 1.0, (3, "R3"): 0.5, (0, "R1"): 1.0, (6, "R3"): 1.0},
)
ACT = _policy("act", [(0, 0, 0), (0.5, 0, 0), (1, 0.5, 0), (0, 0, 0), (0.5, 0.5, 0), (1, 0, 0)])


def test_judge_figures():
    f = summarise(SMOLVLA, OPTIONS).judge
    totals = [2.5, 3.0, 1.5, 2.0, 0.5, 3.0]  # episode 6 has no R3 label: no judge total
    assert f.total_t.n == 6
    assert f.total_t.value == pytest.approx(sum(totals) / 6)
    low, high = stats.t.interval(0.95, 5, loc=sum(totals) / 6, scale=stats.sem(totals))
    assert (f.total_t.low, f.total_t.high) == (pytest.approx(low), pytest.approx(min(high, 3.0)))
    assert f.total_bca.method == "bca"
    assert (f.full_success.successes, f.partial_success.successes) == (2, 6)
    r3 = f.criteria[2]
    assert (r3.mean.n, r3.mean.value) == (6, pytest.approx(2.5 / 6))  # 0.5, 1, 0, 0, 0, 1
    assert (r3.success.successes, r3.partial.successes) == (2, 3)
    r1 = f.criteria[0]
    assert (r1.mean.n, r1.success.successes, r1.partial.successes) == (7, 6, 7)


def test_effective_figures_use_the_latest_override():
    f = summarise(SMOLVLA, OPTIONS).effective
    # R3 after overrides: 0.5, 1, 1, 0.5, 0, 1, 1 -> all seven totals defined.
    assert f.total_t.n == 7
    assert f.total_t.value == pytest.approx((2.5 + 3 + 2.5 + 2.5 + 0.5 + 3 + 3) / 7)
    assert (f.full_success.successes, f.partial_success.successes) == (3, 7)
    assert (f.criteria[2].success.successes, f.criteria[2].partial.successes) == (4, 6)


def test_override_figures():
    o = summarise(SMOLVLA, OPTIONS).overrides
    assert (o.cells.successes, o.cells.estimate.n) == (4, 21)
    assert (o.episodes.successes, o.episodes.estimate.n) == (4, 7)
    assert o.changed == 3  # 0->1, 0->0.5, none->1; the R1 1->1 confirmation changes nothing
    assert o.per_criterion == (("R1", 1, 0.0), ("R2", 0, None), ("R3", 3, pytest.approx(0.75)))


def test_agreement_uses_overridden_cells_with_a_judge_label():
    rows = {a.label: a for a in summarise(SMOLVLA, OPTIONS).agreement}
    assert (rows["R1"].n, rows["R1"].accuracy) == (1, 1.0)  # a confirmation is agreement
    assert rows["R2"].n == 0
    r3 = rows["R3"]  # episode 6 had no judge label: not a pair
    assert (r3.n, r3.accuracy, r3.mae, r3.bias) == (2, 0.0, pytest.approx(0.75), pytest.approx(-0.75))
    assert rows["total"].n == 0  # no episode was reviewed on every criterion


def test_comparison_of_two_policies():
    c = compare(SMOLVLA, ACT, View.EFFECTIVE, OPTIONS)
    a, b = SMOLVLA.totals(View.EFFECTIVE), ACT.totals(View.EFFECTIVE)
    assert (c.first, c.second) == ("smolvla", "act")
    assert c.total.difference.value == pytest.approx(sum(a) / len(a) - sum(b) / len(b))
    ref = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert (c.total.difference.low, c.total.difference.high) == (pytest.approx(ref.low), pytest.approx(ref.high))
    assert c.total.test == permutation_test(a, b)
    assert c.total.test.exact
    raw = [
        permutation_test(SMOLVLA.values(cid, View.EFFECTIVE), ACT.values(cid, View.EFFECTIVE)).p_value
        for cid, _ in CRITERIA
    ]
    assert [d.test.p_value for d in c.criteria] == pytest.approx(raw)
    assert [d.p_holm for d in c.criteria] == pytest.approx(holm_adjust(raw))
    assert c.total.p_holm is None


def test_report_holds_every_pair_in_both_views_and_is_valid_json():
    third = _policy("pi0", [(1, 0, 0), (1, 1, 0)])
    report = build_report([SMOLVLA, ACT, third], OPTIONS, "t")
    pairs = [(c.first, c.second, c.view) for c in report.comparisons]
    assert pairs == [
        ("smolvla", "act", View.JUDGE),
        ("smolvla", "act", View.EFFECTIVE),
        ("smolvla", "pi0", View.JUDGE),
        ("smolvla", "pi0", View.EFFECTIVE),
        ("act", "pi0", View.JUDGE),
        ("act", "pi0", View.EFFECTIVE),
    ]
    doc = json.loads(json.dumps(report.to_dict(), allow_nan=False))
    assert doc["policies"][0]["effective"]["mean_total_t"]["n"] == 7
    assert doc["policies"][0]["episodes"][2]["criteria"]["R3"] == {
        "unadjusted": {"score": 0, "source": "judge (m)"},
        "effective": {"score": 1.0, "source": "person"},
        "override": {"score": 1.0, "reason": "view_ambiguous", "reviewer": "ana", "created_at": "t"},
    }
    assert doc["policies"][0]["episodes"][0]["criteria"]["R2"]["effective"] == {"score": 1, "source": "judge (m)"}
    assert [doc["policies"][0][k]["label"] for k in ("unadjusted", "effective")] == [
        "judge (m)",
        "effective (judge + 4 person overrides)",
    ]
    assert any("n = 2" in c for c in report.caveats)
    assert any("not a random sample" in c for c in report.caveats)


# Two episodes per policy: R1 varies, R2 and R3 are 0 everywhere (the review's degenerate case).
TINY_A = _policy("a", [(0.5, 0, 0), (1, 0, 0)])
TINY_B = _policy("b", [(0, 0, 0), (0.5, 0, 0)])


def _estimates(doc: object, path: str = "") -> list[tuple[str, dict]]:
    """Every estimate in the JSON document (dicts with value, low and high), with where it is."""
    if isinstance(doc, dict):
        here = [(path, doc)] if {"value", "low", "high"} <= doc.keys() else []
        return here + [e for k, v in doc.items() for e in _estimates(v, f"{path}/{k}")]
    if isinstance(doc, list):
        return [e for i, v in enumerate(doc) for e in _estimates(v, f"{path}/{i}")]
    return []


def test_intervals_never_leave_the_possible_range():
    report = build_report([TINY_A, TINY_B, SMOLVLA, ACT], OPTIONS, "t")
    found = _estimates(report.to_dict())
    assert len(found) > 100
    for where, e in found:
        if e["low"] is None:
            continue
        if "/comparisons/" in where:
            width = 3.0 if "/total/" in where else 1.0
            allowed = (-width, width)
        elif "mean_total" in where:
            allowed = (0.0, 3.0)
        else:
            allowed = (0.0, 1.0)  # criterion means and every rate
        assert allowed[0] <= e["low"] <= e["value"] <= e["high"] <= allowed[1], (where, e)
    r1 = report.comparisons[0].criteria[0].difference  # a − b on R1: 0.75 − 0.25 with two episodes each
    assert (r1.value, r1.low, r1.high, r1.clipped) == (pytest.approx(0.5), -1.0, 1.0, True)


def test_a_criterion_without_variation_says_so_instead_of_an_interval():
    report = build_report([TINY_A, TINY_B], OPTIONS, "t")
    rows = {(r[0], r[1]): r for r in criteria_table(report).rows}
    assert rows[("a", "R3 push aside")][2] == "0.00 (no variation in 2 episodes)"
    assert rows[("a", "R1 fold initiation")][2] == "0.75 [0.00, 1.00]"  # 0.75 ± 3.18 clipped to the scale
    diffs = [r for r in comparison_table(report).rows if r[2] in ("R2 mean", "R3 mean")]
    assert len(diffs) == 4  # two criteria, two views
    assert {(r[3], r[4], r[5]) for r in diffs} == {
        ("0.00 (no variation in 4 episodes)", "no variation in 4 episodes", "–")
    }
    judge = report.comparisons[0]
    assert [d.test.p_value is None for d in judge.criteria] == [False, True, True]
    assert judge.criteria[0].p_holm == pytest.approx(judge.criteria[0].test.p_value)  # Holm over the varying one only
    assert [d.difference.method for d in judge.criteria[1:]] == ["no_variation", "no_variation"]
