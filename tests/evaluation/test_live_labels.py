"""The operator's live scores become human labels: once, bound to the episode now, shown and counted like a review's.

A small dataset (three one-second episodes) judged for real through the SDK against the loopback API
(R1, R2, R3 per episode in JUDGED), copied per test with its store; live score files are written with
the deploy side's own function, and taken in by the import every command runs when it opens a dataset.
"""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
from contextlib import closing
from pathlib import Path

import httpx
import pytest

from evaluation.commands.judge import main as judge_main
from evaluation.commands.report import main as report_main
from evaluation.currency import episodes_now
from evaluation.episode_source import open_dataset
from evaluation.live_labels import import_live_scores
from evaluation.overrides import LIVE_REASON, OverrideStore, effective_scores, overrides_of, stale_overrides
from evaluation.store import EvaluationStore, default_store_path
from evaluation.testing.fake_messages_server import FakeMessagesServer
from evaluation.testing.synthetic_dataset import Scenario
from robot.shell.exit_codes import Exit
from teleop.dataset.live_scores import LiveScore, live_score_path, write_live_score
from tests.evaluation.review.currency_testkit import SCENARIOS, judge, rerecord, small_dataset
from tests.support.review_server import ReviewProcess, serving

JUDGED = {0: (1, 1, 0.5), 1: (1, 0.5, 0), 2: (1, 1, 1)}  # the judge's R1, R2, R3 per episode
WHEN = "2026-01-05T14:02:11.250+00:00"
ANA = LiveScore(0, "ana", {"R1": 0.0, "R2": 1.0, "R3": 0.5}, scored_at=WHEN)  # disagrees on R1 only
SKIP = LiveScore(1, "ana", skipped=True, scored_at=WHEN)
BOB = LiveScore(2, "bob", {"R1": 0.5, "R9": 1.0}, scored_at=WHEN)  # R9 is no criterion of the rubric


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dataset, judged once (store beside it, tag "smolvla"). Read-only: tests copy it."""
    root = small_dataset(tmp_path_factory.mktemp("live") / "fold")
    with FakeMessagesServer(expected_model="claude-sonnet-5-5") as server:
        assert judge(root, server, JUDGED).scored == 3
    return root


@pytest.fixture
def root(template: Path, tmp_path: Path) -> Path:
    """A private copy of the judged dataset and its store."""
    out = tmp_path / template.name
    shutil.copytree(template, out)
    shutil.copy(default_store_path(template), default_store_path(out))
    return out


def _effective(root: Path) -> dict:
    source = open_dataset(root)
    with EvaluationStore(default_store_path(root)) as store:
        return effective_scores(store, source.dataset_id, episodes_now(source))


def _rows(root: Path) -> dict[str, int]:
    with closing(sqlite3.connect(default_store_path(root))) as conn:
        return {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("overrides", "live_score_imports")}


def test_live_scores_become_labels_of_the_operator_once(root: Path):
    for score in (ANA, SKIP, BOB):
        write_live_score(root, score)
    source = open_dataset(root)
    report = import_live_scores(source, default_store_path(root))
    assert report.recorded == [(0, ("R1", "R2", "R3")), (2, ("R1",))]
    assert report.skipped == [1]
    assert [line for line in report.lines() if "R9" in line] == [
        "live scores of criteria the rubric (R1, R2, R3) does not have, not recorded: R9 (episodes [2])"
    ]
    eff = _effective(root)
    r1 = eff[0]["R1"]
    assert (r1.judge, r1.effective, r1.source) == (1.0, 0.0, "override")
    label = r1.overridden_by
    assert (label.reviewer, label.reason, label.live, label.old_score) == ("ana", LIVE_REASON, True, None)
    assert label.episode_fingerprint == source.fingerprint(source.episode(0))  # bound to the episode as it is
    assert label.judge_score_id is not None  # the judge's score underneath, for the audit trail
    assert label.created_at == WHEN  # when the operator scored it
    assert eff[2]["R1"].overridden_by.reviewer == "bob"
    assert "R9" not in eff[2]
    assert all(e.overridden_by is None for e in eff[1].values())  # a skip records nothing
    before = _rows(root)
    assert before == {"overrides": 4, "live_score_imports": 3}

    again = import_live_scores(open_dataset(root), default_store_path(root))  # the next open, as a new process
    assert (again.recorded, again.skipped, again.lines()) == ([], [], [])
    assert _rows(root) == before
    raw = sqlite3.connect(default_store_path(root))
    with closing(raw), pytest.raises(sqlite3.IntegrityError, match="append-only"):
        raw.execute("DELETE FROM live_score_imports")


def test_a_file_that_does_not_describe_an_episode_now_is_named_at_every_open_and_the_others_are_recorded(root: Path):
    write_live_score(root, ANA)
    torn = live_score_path(root, 1)
    torn.write_text('{"schema": 1, "episode_')
    longer = write_live_score(root, LiveScore(2, "bob", {"R1": 1.0}, scored_at=WHEN, frames=999))  # edited since
    lost = write_live_score(root, LiveScore(7, "bob", {"R1": 1.0}, scored_at=WHEN))  # its episode was never saved
    for _ in range(2):
        report = import_live_scores(open_dataset(root), default_store_path(root))
        for path, why in (
            (torn, "is not a live score"),
            (longer, "999 frames, episode 2 has 30"),
            (lost, "episode 7, which the dataset does not hold"),
        ):
            [line] = [line for line in report.lines() if str(path) in line]
            assert why in line
            assert f"mv {path} {path}.bad" in line  # the next step, pasteable
    assert report.recorded == []  # episode 0's were recorded at the first open
    assert _rows(root) == {"overrides": 3, "live_score_imports": 1}


def test_a_rerecorded_episode_makes_its_live_label_stale_and_the_old_file_is_not_taken_again(root: Path):
    write_live_score(root, LiveScore(1, "ana", {"R1": 0.0}, scored_at=WHEN))
    import_live_scores(open_dataset(root), default_store_path(root))
    assert _effective(root)[1]["R1"].overridden_by.live
    old_file = live_score_path(root, 1).read_bytes()

    rerecord(root, (SCENARIOS[0], Scenario.GRASP_ONLY, SCENARIOS[2]))  # episode 1 has new content now
    source = open_dataset(root)
    now = episodes_now(source)
    with EvaluationStore(default_store_path(root)) as store:
        r1 = effective_scores(store, source.dataset_id, now)[1]["R1"]  # the judge's result is stale too
        assert (r1.effective, r1.source, r1.overridden_by) == (None, "none", None)
        assert [(o.reviewer, o.live) for o in r1.stale] == [("ana", True)]
        assert [(o.episode_index, o.reviewer, o.live) for o in stale_overrides(store, source.dataset_id, now)] == [
            (1, "ana", True)
        ]

    live_score_path(root, 1).parent.mkdir(parents=True)  # the old score left behind is not the new episode's
    live_score_path(root, 1).write_bytes(old_file)
    assert import_live_scores(source, default_store_path(root)).recorded == []
    write_live_score(root, LiveScore(1, "ana", {"R1": 1.0}))  # scored again after the re-recording
    assert import_live_scores(source, default_store_path(root)).recorded == [(1, ("R1",))]
    with EvaluationStore(default_store_path(root)) as store:
        label = effective_scores(store, source.dataset_id, episodes_now(source))[1]["R1"].overridden_by
    assert (label.new_score, label.episode_fingerprint) == (1.0, now[1])


def test_a_reviewers_label_is_never_shadowed_and_off_scale_scores_are_left_out(root: Path):
    source = open_dataset(root)
    with EvaluationStore(default_store_path(root)) as store, OverrideStore(store) as overrides:
        overrides.record(
            source.dataset_id,
            0,
            "R2",
            0.5,
            "view_ambiguous",
            "",
            "rita",
            1.0,
            fingerprint=source.fingerprint(source.episode(0)),
        )
    write_live_score(root, ANA)
    write_live_score(root, LiveScore(2, "bob", {"R1": 0.3, "R2": 0.0}, scored_at=WHEN))
    report = import_live_scores(source, default_store_path(root))
    assert report.recorded == [(0, ("R1", "R3")), (2, ("R2",))]
    assert "live scores of cells a reviewer already labelled, not recorded: episode 0 R2" in report.lines()
    assert "live scores off the 0 / 0.5 / 1 scale, not recorded: episode 2 R1=0.3" in report.lines()
    assert _effective(root)[0]["R2"].overridden_by.reviewer == "rita"

    write_live_score(root, LiveScore(0, "ana", {"R1": 1.0}))  # the operator corrected the score later
    assert import_live_scores(source, default_store_path(root)).recorded == [(0, ("R1",))]
    with EvaluationStore(default_store_path(root)) as store:
        history = [o for o in overrides_of(store, source.dataset_id, 0) if o.criterion == "R1"]
    assert [(o.new_score, o.supersedes) for o in history] == [(0.0, None), (1.0, history[0].override_id)]


def test_the_review_page_shows_a_live_label_as_a_persons_marked_live(root: Path):
    write_live_score(root, ANA)
    import_live_scores(open_dataset(root), default_store_path(root))
    with serving(root, default_store_path(root)) as server:
        page = httpx.get(f"{server.url}/episodes/0", timeout=60).text
    r1 = page[page.index('id="criterion-R1"') : page.index('id="criterion-R2"')]
    assert '<span class="muted effective-by">(live operator)</span>' in r1
    assert 'data-source="override">0</b>' in r1  # the effective score is the operator's
    assert '<td>ana <span class="tag live"' in r1  # audit trail: who, marked live
    assert '<td class="reason">live</td>' in r1
    assert 'class="tag raced"' not in r1  # the operator saw no score: not a race with the judge


def _agreement(root: Path, out: Path) -> dict[str, dict]:
    assert report_main([f"--datasets=[{root}]", f"--output_dir={out}"]) == Exit.DONE
    [policy] = json.loads((out / "report.json").read_text())["policies"]
    return {a["label"]: a for a in policy["agreement"]} | {"policy": policy}


def test_the_report_counts_live_labels_as_human_labels(root: Path, tmp_path: Path):
    before = _agreement(root, tmp_path / "before")
    assert [before[c]["n"] for c in ("R1", "R2", "R3", "total")] == [0, 0, 0, 0]
    for score in (ANA, SKIP, BOB):
        write_live_score(root, score)
    after = _agreement(root, tmp_path / "after")  # the report takes them in when it opens the dataset
    # R1: judge 1 vs ana 0 (episode 0) and judge 1 vs bob 0.5 (episode 2); R2, R3: agree on episode 0.
    assert (after["R1"]["n"], after["R1"]["accuracy"], after["R1"]["mae"], after["R1"]["bias"]) == (2, 0.0, 0.75, 0.75)
    assert [(after[c]["n"], after[c]["accuracy"]) for c in ("R2", "R3")] == [(1, 1.0), (1, 1.0)]
    assert (after["total"]["n"], after["total"]["bias"]) == (1, 1.0)  # episode 0: judge 2.5, people 1.5
    policy = after["policy"]
    assert policy["effective"]["label"] == "effective (judge + 4 person overrides, 4 live)"
    cell = policy["episodes"][0]["criteria"]["R1"]
    assert (cell["effective"]["source"], cell["override"]["reviewer"], cell["override"]["reason"]) == (
        "live operator",
        "ana",
        "live",
    )
    assert "R1 1→0 (live, ana)" in (tmp_path / "after" / "report.md").read_text()


def test_so101_judge_takes_them_in_when_it_opens_the_dataset(template: Path, tmp_path: Path, capsys):
    fresh = tmp_path / "fold"
    shutil.copytree(template, fresh)  # no store beside it yet
    write_live_score(fresh, BOB)
    assert judge_main([f"--dataset.root={fresh}", "--scorer=heuristic"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "recorded 1 live label(s) of 1 episode(s)" in out
    assert "not recorded: R9 (episodes [2])" in out
    with EvaluationStore(default_store_path(fresh)) as store:
        assert [(o.episode_index, o.criterion, o.reviewer, o.live) for o in overrides_of(store, "fold")] == [
            (2, "R1", "bob", True)
        ]


@pytest.mark.slow
def test_so101_review_takes_them_in_when_it_opens_the_dataset(root: Path):
    write_live_score(root, ANA)
    review = ReviewProcess(f"--dataset.root={root}", "--server.port=0", "--reviewer=tester")
    try:
        review.url()
    finally:
        review.proc.send_signal(signal.SIGINT)
        assert review.proc.wait(timeout=60) == 0, review.output
        review.reader.join(timeout=10)
    assert "recorded 3 live label(s) of 1 episode(s)" in " ".join(review.output.split())
    assert _rows(root) == {"overrides": 3, "live_score_imports": 1}
