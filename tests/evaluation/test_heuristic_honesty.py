"""The motion heuristic claims no more than the joints show, and every score it gives says "heuristic".

Motion signals are built from the synthetic scripts with arms held still, then scored by the real
motion check; the report and review page come from a real heuristic run of so101-judge's runner on
the session's synthetic dataset, through the real store, report code, matplotlib and FastAPI app.
"""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from matplotlib.figure import Figure
from matplotlib.text import Text
from rich.console import Console

from evaluation.commands import report as report_command
from evaluation.commands.report import main as report_main
from evaluation.episode_score import EpisodeScore
from evaluation.episode_source import EpisodeSignals, open_dataset
from evaluation.export import export_scores
from evaluation.judge.aggregate import heuristic_scores
from evaluation.judge.events import EventConfig, find_events
from evaluation.judge.motion_check import MotionCheck, MotionCheckConfig, check_motion
from evaluation.judge.run import run_judge
from evaluation.overrides import OverrideStore
from evaluation.report.config import PolicySpec, StatsConfig
from evaluation.report.load import load_policy
from evaluation.report.model import Report, build_report
from evaluation.report.output import write_report
from evaluation.report.plots import comparison_figure, criteria_figure, heatmap_figure, render_plots
from evaluation.review.app import ReviewSettings, create_app
from evaluation.review.catalog import ReviewCatalog
from evaluation.rubric import load_rubric
from evaluation.store import EvaluationStore
from evaluation.testing.synthetic_dataset import NAMES, Scenario, scripted_signals
from evaluation.vocabulary import RouteCode
from robot.joints import BODY_JOINTS, GRIPPER, Side
from tests.evaluation.judge.judge_testkit import judge_config
from tests.evaluation.report.report_testkit import add_run

N = 300  # 10 s at 30 fps
RUBRIC = load_rubric()
DATASET = "fold_virtual"
DOC_REFERENCE = "docs/judge-research.md"  # a file name the report cites; not a label of any score


def _signals(scenario: Scenario) -> EpisodeSignals:
    state, action = scripted_signals(scenario, N)
    return EpisodeSignals(state, action, NAMES, 30)


def _hold_still(signals: EpisodeSignals, side: Side) -> EpisodeSignals:
    """The arm's body joints stay at their first pose (with sensor noise); its gripper does what it did."""
    state, action = signals.state.copy(), signals.action.copy()
    rng = np.random.default_rng(7)
    for joint in BODY_JOINTS:
        col = signals.column(f"{side.value}_{joint}.pos")
        action[:, col] = action[0, col]
        state[:, col] = action[0, col] + rng.normal(0.0, 0.05, len(state))
    return replace(signals, state=state, action=action)


def _gripper_open(signals: EpisodeSignals, side: Side) -> EpisodeSignals:
    state, action = signals.state.copy(), signals.action.copy()
    col = signals.column(f"{side.value}_{GRIPPER}.pos")
    state[:, col] = action[:, col] = 90.0
    return replace(signals, state=state, action=action)


def _score(signals: EpisodeSignals) -> tuple[MotionCheck, EpisodeScore]:
    motion = check_motion(signals, find_events(signals, EventConfig()), MotionCheckConfig())
    return motion, heuristic_scores(RUBRIC, motion)


def _scores(result: EpisodeScore) -> dict[str, float | None]:
    return {c.criterion: c.score for c in result.criteria}


def _reasons(result: EpisodeScore) -> set[tuple[str, RouteCode]]:
    return {(r.criterion, r.code) for r in result.reasons}


def test_arms_that_never_move_score_zero_on_every_criterion():
    # The tiny-ACT case: grippers close and open, the arms stay at their start pose.
    still = _hold_still(_hold_still(_signals(Scenario.FOLD_AND_PUSH), Side.LEFT), Side.RIGHT)
    motion, result = _score(still)
    assert [(a.moved, a.grasps, a.releases) for a in motion.arms] == [(False, 1, 1), (False, 1, 1)]
    assert motion.did_nothing
    assert set(motion.to_dict()["signals"].values()) == {0.0}
    assert _scores(result) == {"R1": 0.0, "R2": 0.0, "R3": 0.0}
    assert result.total == 0.0
    assert _reasons(result) == {("", RouteCode.IDLE_ARM)}  # a person learns the closings were set aside
    assert [r.detail.split(" never")[0] for r in result.reasons] == ["the left arm", "the right arm"]
    # Nothing moves at all: 0 everywhere, and nothing for a person to check.
    _, idle = _score(_signals(Scenario.IDLE))
    assert (_scores(idle), idle.routed) == ({"R1": 0.0, "R2": 0.0, "R3": 0.0}, False)


def test_a_left_arm_that_never_moves_adds_nothing():
    # The left gripper cycles in place; the right arm travels the whole script with its gripper open.
    signals = _gripper_open(_hold_still(_signals(Scenario.FOLD_AND_PUSH), Side.LEFT), Side.RIGHT)
    motion, result = _score(signals)
    assert [(a.side, a.moved) for a in motion.arms] == [(Side.LEFT, False), (Side.RIGHT, True)]
    assert not motion.did_nothing
    assert _scores(result) == {"R1": 0.0, "R2": 0.0, "R3": 0.0}
    assert _reasons(result) == {("", RouteCode.IDLE_ARM)}
    assert result.reasons[0].detail.startswith("the left arm never left its start pose")


def test_the_right_arm_alone_earns_what_it_did_and_the_cloth_is_left_to_a_person():
    motion, result = _score(_hold_still(_signals(Scenario.FOLD_AND_PUSH), Side.LEFT))
    assert [a.moved for a in motion.arms] == [False, True]
    assert _scores(result) == {"R1": 1.0, "R2": None, "R3": None}
    assert result.total is None  # not a total the heuristic can know
    assert _reasons(result) == {
        ("R2", RouteCode.HEURISTIC_BLIND),
        ("R3", RouteCode.HEURISTIC_BLIND),
        ("", RouteCode.IDLE_ARM),
    }
    r2 = result.criteria[1]
    assert (r2.source, r2.heuristic_score, r2.n_valid) == ("heuristic", 0.5, 0)  # the motion evidence is kept


@pytest.mark.parametrize(
    ("scenario", "expected", "blind"),
    [
        (Scenario.FOLD_AND_PUSH, {"R1": 1.0, "R2": None, "R3": None}, {"R2", "R3"}),
        (Scenario.FOLD_NO_PUSH, {"R1": 1.0, "R2": None, "R3": 0.0}, {"R2"}),  # no push after the release: 0
        (Scenario.GRASP_ONLY, {"R1": 0.5, "R2": None, "R3": 0.0}, {"R2"}),  # never released: no push either
    ],
)
def test_final_state_criteria_are_scored_only_where_the_motion_rules_them_out(scenario, expected, blind):
    _, result = _score(_signals(scenario))
    assert _scores(result) == expected
    assert {c for c, code in _reasons(result) if code is RouteCode.HEURISTIC_BLIND} == blind
    assert all("final state" in r.detail for r in result.reasons)


class _VisibleText(HTMLParser):
    """The text a reader sees, outside scripts, styles and (optionally) forms."""

    def __init__(self, skip: tuple[str, ...]) -> None:
        super().__init__()
        self.skip, self.depth, self.parts = skip, 0, []

    def handle_starttag(self, tag, attrs):
        self.depth += tag in self.skip

    def handle_endtag(self, tag):
        self.depth -= tag in self.skip

    def handle_data(self, data):
        if not self.depth:
            self.parts.append(data)


def _visible(html: str, skip: tuple[str, ...] = ("script", "style")) -> str:
    parser = _VisibleText(skip)
    parser.feed(html)
    return " ".join(" ".join(parser.parts).split())


def _figure_texts(fig: Figure) -> list[str]:
    fig.canvas.draw()  # legends and tick labels get their text when drawn
    return [t.get_text() for t in fig.findobj(Text) if t.get_text().strip()]


@pytest.fixture(scope="module")
def heuristic_store(dataset_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two policies scored by the heuristic (tags motion-a: episodes 0-2, motion-b: 1, 3, 4); a person set R2 of 0."""
    path = tmp_path_factory.mktemp("heuristic") / "fold.sqlite"
    for tag, episodes in (("motion-a", (0, 1, 2)), ("motion-b", (1, 3, 4))):
        config = judge_config(dataset_root, path)
        config = replace(
            config,
            scorer="heuristic",
            dataset=replace(config.dataset, episodes=episodes),
            run=replace(config.run, tag=tag, force=True),
        )
        with EvaluationStore(path) as store:
            assert run_judge(open_dataset(dataset_root), RUBRIC, config, store, None).scored == 3
    with EvaluationStore(path) as store, OverrideStore(store) as overrides:
        overrides.record(DATASET, 0, "R2", 1.0, "heuristic_disagrees", "folded in the overhead view", "ana", None)
    return path


@pytest.fixture(scope="module")
def heuristic_report(heuristic_store: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Report, Path]:
    specs = [PolicySpec(name=t, store_path=heuristic_store, tag=t) for t in ("motion-a", "motion-b")]
    report = build_report([load_policy(s) for s in specs], StatsConfig(bootstrap_resamples=1000), "Fold")
    out = tmp_path_factory.mktemp("report")
    write_report(report, render_plots(report), out)
    return report, out


def _without_doc_reference(text: str) -> str:
    return text.replace(DOC_REFERENCE, "")


def test_the_report_files_say_heuristic_and_never_judge(heuristic_report):
    _, out = heuristic_report
    md = (out / "report.md").read_text(encoding="utf-8")
    html = _visible((out / "report.html").read_text(encoding="utf-8"))
    for text in (md, html):
        assert "judge" not in _without_doc_reference(text).lower()
        assert "| motion-a | heuristic | 1 |" in md  # the headline row names its source
        assert "effective (heuristic + 1 person override)" in text
        assert "mean, heuristic" in text
        assert "Heuristic versus person" in text
    episodes_header = next(line for line in md.splitlines() if line.startswith("| episode |"))
    assert episodes_header.startswith("| episode | heuristic | heuristic total | effective (heuristic + 1 person")


def test_the_report_command_prints_heuristic_and_never_judge(
    heuristic_store: Path, tmp_path: Path, capsys, monkeypatch
):
    monkeypatch.setattr(report_command, "console", Console(width=200))  # wide enough that no cell wraps
    code = report_main([f"--store_path={heuristic_store}", "--tags=[motion-a,motion-b]", f"--output_dir={tmp_path}"])
    assert code == 0
    out = " ".join(capsys.readouterr().out.split())
    printed = out.split(f"report: {tmp_path}")[0]  # the summary tables and notes, before the file list
    assert "judge" not in _without_doc_reference(printed).lower()
    assert "│ motion-a │ heuristic │ 1 │" in out  # n counts episodes with every criterion scored
    assert "effective (heuristic + 1 person override)" in out
    assert "motion-a − motion-b │ heuristic │" in out


def test_report_json_names_the_source_of_every_score(heuristic_report):
    _, out = heuristic_report
    text = (out / "report.json").read_text(encoding="utf-8")
    assert "judge" not in _without_doc_reference(text).lower()
    doc = json.loads(text)
    a = doc["policies"][0]
    assert (a["scorer_label"], a["unadjusted"]["view"], a["unadjusted"]["label"]) == ("heuristic",) * 3
    assert (a["effective"]["view"], a["effective"]["label"]) == (
        "effective",
        "effective (heuristic + 1 person override)",
    )
    assert [c["view"] for c in doc["comparisons"]] == ["heuristic", "effective"]
    cells = [c for p in doc["policies"] for e in p["episodes"] for c in e["criteria"].values()]
    assert {c["unadjusted"]["source"] for c in cells} == {"heuristic"}
    assert {c["effective"]["source"] for c in cells} == {"heuristic", "person"}
    r2 = a["episodes"][0]["criteria"]["R2"]
    assert r2["unadjusted"] == {"score": None, "source": "heuristic"}  # not seen, so not scored
    assert r2["effective"] == {"score": 1.0, "source": "person"}


def test_every_plot_text_says_heuristic_and_never_judge(heuristic_report):
    report, _ = heuristic_report
    figures = [criteria_figure(report), comparison_figure(report), *(heatmap_figure(p.scores) for p in report.policies)]
    for fig in figures:
        texts = _figure_texts(fig)
        assert not [t for t in texts if "judge" in t.lower()]
        assert any("heuristic" in t for t in texts), texts
    criteria_titles = [ax.get_title() for ax in figures[0].axes]
    assert criteria_titles[:2] == [
        "criterion mean\nheuristic",
        "criterion mean\neffective (heuristic + person overrides)",
    ]
    heatmap_title = figures[2].axes[0].get_title()
    assert heatmap_title.endswith("effective (heuristic + 1 person override)")
    assert "person override: heuristic→person" in _figure_texts(figures[2])


def test_the_review_page_of_a_heuristic_episode_says_heuristic(dataset_root: Path, heuristic_store: Path):
    with EvaluationStore(heuristic_store) as store, OverrideStore(store) as overrides:
        app = create_app(ReviewCatalog(open_dataset(dataset_root), store), overrides, ReviewSettings(reviewer="ana"))
        with TestClient(app, base_url="http://127.0.0.1") as client:
            pages = {i: client.get(f"/episodes/{i}") for i in (0, 2)}
    for page in pages.values():
        assert page.status_code == 200
        # The override form lists the reviewer's reason codes (judge_missed_evidence, ...): not score labels.
        text = _visible(page.text, skip=("script", "style", "form"))
        assert "judge" not in text.lower(), text
        assert "scores from: heuristic (heuristic:motion-v2)" in text
    first = _visible(pages[0].text, skip=("script", "style", "form"))
    assert "total: heuristic – · effective" in first  # R2 and R3 are unknown to the heuristic
    assert "R2: heuristic_blind" in first
    assert "heuristic – (motion evidence 0.5: not enough to score; a person decides) · effective 1 (person)" in first
    assert "R1 fold initiation Did a gripper grasp" in first
    assert "heuristic 1 (motion evidence 1) · effective 1 (heuristic)" in first


def test_the_csv_export_names_who_scored_each_row(heuristic_store: Path, tmp_path: Path):
    path = tmp_path / "mixed.sqlite"
    with EvaluationStore(path) as store:
        add_run(store, DATASET, "llm-run", {0: (1, 0.5, 0)})  # an LLM judge run beside the heuristic's
    with EvaluationStore(heuristic_store) as store:
        assert export_scores(store, tmp_path / "h.csv") == 18
    with EvaluationStore(path) as store:
        assert export_scores(store, tmp_path / "j.csv") == 3
    heuristic = list(csv.DictReader((tmp_path / "h.csv").open()))
    llm = list(csv.DictReader((tmp_path / "j.csv").open()))
    assert {(r["source"], r["scored_by"]) for r in heuristic} == {("heuristic", "heuristic")}
    assert {(r["source"], r["scored_by"]) for r in llm} == {("judge", "judge (claude-sonnet-5-5)")}
    header = list(heuristic[0])
    assert header[header.index("source") + 1] == "scored_by"
    assert {r["score"] for r in heuristic if r["episode_index"] == "0" and r["criterion"] != "R1"} == {""}  # unseen
