"""so101-report beside virtual ground truth: truth per criterion, and the scorer and people against it, by hand.

A real store holds one judge run (tag "pol"), a truth run (untagged, as so101-judge --scorer=truth
stores it) and two person overrides; the figures are checked against values computed by hand.
"""

import json
from pathlib import Path

import pytest

from evaluation.report.config import PolicySpec, StatsConfig
from evaluation.report.load import load_policy
from evaluation.report.model import build_report
from evaluation.report.output import write_report
from evaluation.report.plots import render_plots
from evaluation.report.truth import snap
from evaluation.store import EvaluationStore
from tests.evaluation.report.report_testkit import add_override, add_run, add_truth

# Judge labels and truth (R1, R2, R3). Truth snapped to the levels: ep0 (1, 0.5, 0), ep1 (0, 0, 0),
# ep2 (1, 1, 0.5), ep3 (0.5, 0, 0.5): 0.75 and 0.25 are ties, which go to the lower level.
JUDGE = {0: (1.0, 0.5, 0.0), 1: (0.0, 0.0, 0.0), 2: (1.0, 1.0, 1.0), 3: (0.5, 0.5, 0.5)}
TRUTH = {0: (0.9, 0.3, 0.2), 1: (0.1, 0.0, 0.0), 2: (1.0, 0.8, 0.7), 3: (0.75, 0.25, 0.5)}


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("truth") / "fold.sqlite"
    with EvaluationStore(path) as store:
        add_run(store, "fold", "pol", JUDGE)
        add_truth(store, "fold", TRUTH, trimmed=(3,))
    add_override(path, "fold", 0, "R2", 0.0)  # a person against truth 0.3 (snapped 0.5)
    add_override(path, "fold", 2, "R3", 0.5)  # a person against truth 0.7 (snapped 0.5)
    return path


def test_snapping_goes_to_the_nearest_level_and_a_tie_to_the_lower():
    assert [snap(v) for v in (0.0, 0.24, 0.25, 0.26, 0.7, 0.75, 0.76, 1.0)] == [0, 0, 0, 0.5, 0.5, 0.5, 1, 1]


def test_truth_sits_beside_each_cell_and_the_agreement_with_it_is_computed_by_hand(store_path):
    scores = load_policy(PolicySpec(name="pol", store_path=store_path, tag="pol"))
    assert scores.scorer == "llm"  # truth is never the policy's scorer
    assert [[c.truth for c in e.cells] for e in scores.episodes] == [list(TRUTH[i]) for i in range(4)]
    assert [e.truth_of_whole_recording for e in scores.episodes] == [False, False, False, True]
    truth = build_report([scores], StatsConfig(bootstrap_resamples=200), "t").policies[0].truth
    assert truth is not None
    assert (truth.episodes, truth.whole_recording) == (4, 1)
    assert dict(truth.means)["R1"] == pytest.approx((0.9 + 0.1 + 1.0 + 0.75) / 4)
    r1, r2, r3, total = truth.scorer
    # R1: snapped truth equals the judge everywhere; MAE and bias on the continuous truth.
    assert (r1.n, r1.accuracy, r1.kappa) == (4, 1.0, pytest.approx(1.0))
    assert (r1.mae, r1.bias) == (pytest.approx(0.45 / 4), pytest.approx(-0.25 / 4))
    # R3: judge [0, 0, 1, 0.5] against snapped [0, 0, 0.5, 0.5]: observed weighted disagreement 1/4 * 1/4,
    # chance 1/4 (marginals judge 1/2, 1/4, 1/4; truth 1/2, 1/2, 0) -> kappa 0.75.
    assert r3.confusion == ((2, 0, 0), (0, 1, 0), (0, 1, 0))
    assert (r3.accuracy, r3.kappa) == (0.75, pytest.approx(0.75))
    assert (r3.mae, r3.bias) == (pytest.approx(0.5 / 4), pytest.approx(0.1 / 4))
    assert r2.accuracy == 0.75  # ep0: 0.5 vs 0.3 -> 0.5 agrees; ep3: 0.5 vs 0.25 -> 0 does not
    # Totals 1.5, 0, 3, 1.5 against 1.4, 0.1, 2.5, 1.5 (snapped sums 1.5, 0, 2.5, 1.0).
    assert (total.n, total.accuracy, total.kappa) == (4, 0.5, None)
    assert (total.mae, total.bias) == (pytest.approx(0.7 / 4), pytest.approx(0.5 / 4))
    # People: R2 of ep0 (0 against 0.3) and R3 of ep2 (0.5 against 0.7); no episode has all three.
    p1, p2, p3, p_total = truth.person
    assert (p1.n, p2.n, p3.n, p_total.n) == (0, 1, 1, 0)
    assert (p2.accuracy, p2.mae, p2.bias) == (0.0, pytest.approx(0.3), pytest.approx(-0.3))
    assert (p3.accuracy, p3.mae, p3.bias) == (1.0, pytest.approx(0.2), pytest.approx(-0.2))


def test_the_report_files_show_truth_labelled_beside_the_judge_and_the_people(store_path, tmp_path):
    report = build_report(
        [load_policy(PolicySpec(name="pol", store_path=store_path, tag="pol"))],
        StatsConfig(bootstrap_resamples=200),
        "t",
    )
    write_report(report, render_plots(report), tmp_path)
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "## Against virtual ground truth" in md
    assert "| pol | R1 | 0.69 | judge (claude-sonnet-5-5) | 4 | 100 % | 1.00 |" in md
    assert "| pol | R2 | 0.34 | person | 1 | 0 % | 0.00 | 0.30 | -0.30 |" in md
    header = next(line for line in md.splitlines() if line.startswith("| episode |"))
    assert "| effective total | virtual ground truth | person overrides |" in header
    assert "| #3 | R1=0.5 R2=0.5 R3=0.5 | 1.5 |" in md
    assert "R1=0.75 R2=0.25 R3=0.50 (whole recording)" in md
    assert "1 episode(s) were trimmed after recording: their virtual ground truth describes the whole" in md
    doc = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    policy = doc["policies"][0]
    assert (policy["truth"]["label"], policy["truth"]["definitions"]) == ("virtual ground truth", ["cloth_truth@1"])
    assert policy["truth"]["scorer_vs_truth"][2]["confusion_rater_by_truth"] == [[2, 0, 0], [0, 1, 0], [0, 1, 0]]
    cell = policy["episodes"][0]["criteria"]["R2"]
    assert cell["truth"] == {"score": 0.3, "source": "virtual ground truth"}
    assert cell["effective"] == {"score": 0.0, "source": "person"}  # truth never becomes the effective score
    assert "virtual ground truth" in doc["definitions"]
