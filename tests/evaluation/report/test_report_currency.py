"""so101-report counts only results of episodes that exist now with the fingerprint they were judged on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.commands.report import main
from evaluation.episode_score import CriterionScore, EpisodeScore
from evaluation.report.config import PolicySpec
from evaluation.report.load import load_policy_with_currency
from evaluation.report.scores import View
from evaluation.store import EvaluationStore, RunRecord
from evaluation.testing.fake_messages_server import FakeMessagesServer
from robot.shell.exit_codes import Exit
from tests.evaluation.report.report_testkit import RUBRIC, add_override
from tests.evaluation.review.currency_testkit import delete_in_place, judge, small_dataset

JUDGED = {0: (1, 1, 0.5), 1: (1, 0.5, 0), 2: (1, 1, 1)}  # totals 2.5, 1.5, 3


def _report(root: Path, out_dir: Path) -> tuple[dict, str]:
    assert main([f"--datasets=[{root}]", f"--output_dir={out_dir}"]) == Exit.DONE
    [policy] = json.loads((out_dir / "report.json").read_text())["policies"]
    return policy, (out_dir / "report.md").read_text()


def test_a_result_of_a_deleted_episode_is_left_out_and_said_so(tmp_path: Path, server: FakeMessagesServer):
    root = small_dataset(tmp_path / "fold_edit")
    assert judge(root, server, JUDGED).scored == 3
    before, _ = _report(root, tmp_path / "before")
    assert before["n"] == 3
    assert before["effective"]["mean_total_t"]["value"] == pytest.approx(7 / 3)
    assert "stale" not in before["source"]

    delete_in_place(root, [2])  # LeRobot's delete_episodes, swapped in as lerobot-edit-dataset --root does
    after, markdown = _report(root, tmp_path / "after")
    assert after["n"] == 2
    assert [e["episode_index"] for e in after["episodes"]] == [0, 1]
    assert after["effective"]["mean_total_t"]["value"] == pytest.approx(2.0)  # (2.5 + 1.5) / 2, not 7 / 3
    assert "1 stale result left out (fold_edit: #2 deleted)" in after["source"]
    assert f"checked against the dataset {root}" in after["source"]
    assert "1 stale result left out (fold_edit: #2 deleted)" in markdown

    scores, currency = load_policy_with_currency(PolicySpec(dataset_root=root))
    assert [(d, s.result.episode_index, s.deleted) for d, s in currency.stale_results] == [("fold_edit", 2, True)]
    assert currency.datasets[0].checked_against == root.resolve()
    assert len(scores.episodes) == 2


def _record(store: EvaluationStore, run_id: str, tag: str, results: dict[int, tuple[str, tuple[float, ...]]]) -> None:
    """A judge run whose episodes were scored on the given fingerprints (the dataset folder is not on this machine)."""
    store.start_run(
        RunRecord(
            run_id=run_id,
            scorer="llm",
            config_hash=f"cfg-{tag}",
            config={},
            model="claude-sonnet-5-5",
            prompt_hash="p",
            rubric_version=RUBRIC.version,
            rubric=RUBRIC.to_dict(),
            dataset_id="fold",
            dataset_root="/nowhere/fold",
            dataset_revision="rev",
            tag=tag,
            mode="sync",
            forced=False,
            sdk_version="",
        )
    )
    for index, (fingerprint, labels) in results.items():
        criteria = tuple(
            CriterionScore(cid, "judge", s, s, 1.0, 1, 1, False, None, (), ())
            for cid, s in zip(RUBRIC.criterion_ids, labels, strict=True)
        )
        store.record_episode(
            run_id, f"cfg-{tag}", "fold", index, fingerprint, EpisodeScore(criteria, "scored", ()), {}, 1, 0.0
        )


def test_without_the_dataset_the_newest_fingerprint_on_record_decides(tmp_path: Path):
    path = tmp_path / "fold.evaluation.sqlite"
    with EvaluationStore(path) as store:
        _record(store, "run-a", "v1", {0: ("a0", (1, 1, 1)), 1: ("a1", (0, 0, 0))})
    add_override(path, "fold", 0, "R3", 0.0)  # bound to a0, the fingerprint of the result it overrides
    add_override(path, "fold", 1, "R1", 1.0)  # bound to a1
    with EvaluationStore(path) as store:  # episode 1 was recorded again, and judged again under another tag
        _record(store, "run-b", "v2", {1: ("b1", (0.5, 0.5, 0))})
    scores, currency = load_policy_with_currency(PolicySpec(store_path=path, tag="v1"))
    assert [e.episode_index for e in scores.episodes] == [0]  # v1's episode 1 was judged before it changed
    assert scores.totals(View.EFFECTIVE) == [2.0]  # episode 0's override is current
    assert [(s.result.episode_index, s.deleted) for _, s in currency.stale_results] == [(1, False)]
    assert "'fold' not checked against its dataset (/nowhere/fold not found; pass --datasets=<folder>)" in scores.source
    assert "1 stale result left out (fold: #1 changed)" in scores.source
    v2, currency = load_policy_with_currency(PolicySpec(store_path=path, tag="v2"))
    assert v2.totals(View.JUDGE) == v2.totals(View.EFFECTIVE) == [1.0]  # the override on a1 is not applied to b1
    assert currency.stale_overrides == 1
    assert "1 stale override not applied (made before the episode changed)" in v2.source
