"""Loading a policy's scores from a real evaluation store: selection by tag or dataset, latest results, overrides."""

from pathlib import Path

import pytest

from evaluation.report.config import PolicySpec, StatsConfig
from evaluation.report.errors import MissingStoreError, NoScoresError, ReportError, UnknownTagError
from evaluation.report.load import load_policy
from evaluation.report.model import build_report
from evaluation.report.scores import View
from evaluation.store import EvaluationStore, default_store_path
from tests.evaluation.report.report_testkit import add_override, add_run, two_criterion_rubric


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = tmp_path / "eval.sqlite"
    with EvaluationStore(path) as store:
        add_run(store, "fold_smolvla", "smolvla", {0: (1, 1, 0.5), 1: (1, 1, 1), 2: (1, 0.5, 0)})
        add_run(store, "fold_act", "act", {0: (0, 0, 0), 1: (0.5, 0, 0)})
    return path


def test_a_tag_selects_its_runs(store_path):
    p = load_policy(PolicySpec(store_path=store_path, tag="smolvla"))
    assert (p.name, p.scorer, p.models, p.dataset_ids) == ("smolvla", "llm", ("claude-sonnet-5-5",), ("fold_smolvla",))
    assert p.criteria == (("R1", "fold initiation"), ("R2", "fold completion"), ("R3", "push aside"))
    assert [e.episode_index for e in p.episodes] == [0, 1, 2]
    assert p.totals(View.JUDGE) == [2.5, 3.0, 1.5]
    assert p.values("R3", View.JUDGE) == [0.5, 1.0, 0.0]
    assert not any(e.reviewed for e in p.episodes)
    assert "tag 'smolvla'" in p.source


def test_a_dataset_beside_its_store_is_a_policy(tmp_path):
    root = tmp_path / "datasets" / "fold_act"
    with EvaluationStore(default_store_path(root)) as store:
        add_run(store, "fold_act", "", {3: (1, 0, 0)})
    p = load_policy(PolicySpec(dataset_root=root))
    assert (p.name, p.totals(View.JUDGE)) == ("fold_act", [1.0])


def test_the_newest_scored_result_of_an_episode_wins(store_path):
    with EvaluationStore(store_path) as store:
        add_run(store, "fold_smolvla", "smolvla", {1: (0.5, 0.5, 0.5)})  # judged again (--force)
    p = load_policy(PolicySpec(store_path=store_path, tag="smolvla"))
    assert p.totals(View.JUDGE) == [2.5, 1.5, 1.5]


def test_auto_prefers_the_llm_judge_and_falls_back_to_the_heuristic(store_path):
    with EvaluationStore(store_path) as store:
        add_run(store, "fold_smolvla", "smolvla", {0: (0, 0, 0), 5: (1, 1, 0)}, scorer="heuristic", model="heuristic")
        add_run(store, "fold_h", "only-heuristic", {0: (1, 0.5, 0)}, scorer="heuristic", model="heuristic:motion-v1")
    llm = load_policy(PolicySpec(store_path=store_path, tag="smolvla"))
    # Episode 5 has only a heuristic result: left out of the LLM figures.
    assert (llm.scorer, llm.totals(View.JUDGE), llm.left_out) == ("llm", [2.5, 3.0, 1.5], 1)
    heuristic = load_policy(PolicySpec(store_path=store_path, tag="smolvla"), scorer="heuristic")
    assert heuristic.totals(View.JUDGE) == [0.0, 2.0]
    fallback = load_policy(PolicySpec(store_path=store_path, tag="only-heuristic"))
    assert (fallback.scorer, fallback.totals(View.JUDGE)) == ("heuristic", [1.5])
    with pytest.raises(NoScoresError, match="--scorer=heuristic"):
        load_policy(PolicySpec(store_path=store_path, tag="only-heuristic"), scorer="llm")


def test_overrides_give_the_effective_scores_and_the_latest_one_wins(store_path):
    add_override(store_path, "fold_smolvla", 2, "R3", 0.5)
    add_override(store_path, "fold_smolvla", 2, "R3", 1.0, reviewer="ben")  # later: effective
    add_override(store_path, "fold_smolvla", 0, "R1", 1.0, reason="confirmed")
    p = load_policy(PolicySpec(store_path=store_path, tag="smolvla"))
    assert p.totals(View.JUDGE) == [2.5, 3.0, 1.5]  # the judge's record is untouched
    assert p.totals(View.EFFECTIVE) == [2.5, 3.0, 2.5]
    cell = p.episodes[2].cells[2]
    assert (cell.judge, cell.effective, cell.human.reviewer, cell.human.reason) == (0.0, 1.0, "ben", "view_ambiguous")
    assert [e.reviewed for e in p.episodes] == [True, False, True]
    act = load_policy(PolicySpec(store_path=store_path, tag="act"))
    assert act.totals(View.EFFECTIVE) == act.totals(View.JUDGE)


def test_a_tag_over_two_datasets_keeps_them_apart(tmp_path):
    path = tmp_path / "eval.sqlite"
    with EvaluationStore(path) as store:
        add_run(store, "fold_a", "v2", {0: (1, 1, 1)})
        add_run(store, "fold_b", "v2", {0: (0, 0, 0)})
    p = load_policy(PolicySpec(store_path=path, tag="v2"))
    assert p.dataset_ids == ("fold_a", "fold_b")
    assert [e.label(True) for e in p.episodes] == ["fold_a #0", "fold_b #0"]
    only_b = load_policy(PolicySpec(store_path=path, tag="v2", dataset_id="fold_b"))
    assert only_b.totals(View.JUDGE) == [0.0]


def test_a_missing_store_is_named_and_not_created(tmp_path):
    root = tmp_path / "fold_new"
    with pytest.raises(MissingStoreError, match=r"no evaluation store at .*fold_new\.evaluation\.sqlite.*so101-judge"):
        load_policy(PolicySpec(dataset_root=root))
    assert not default_store_path(root.resolve()).exists()


def test_an_unknown_tag_lists_the_known_ones(store_path):
    with pytest.raises(UnknownTagError, match=r"tag 'smolvla-v3'.*tags in this store: 'act', 'smolvla'"):
        load_policy(PolicySpec(store_path=store_path, tag="smolvla-v3"))


def test_an_unknown_dataset_lists_the_known_ones(store_path):
    with pytest.raises(NoScoresError, match=r"no run of dataset 'fold_x'.*'fold_act', 'fold_smolvla'"):
        load_policy(PolicySpec(store_path=store_path, dataset_id="fold_x"))


def test_runs_without_a_scored_episode(tmp_path):
    path = tmp_path / "eval.sqlite"
    with EvaluationStore(path) as store:
        add_run(store, "fold", "empty", {})
    with pytest.raises(NoScoresError, match="holds no scored episode; run so101-judge"):
        load_policy(PolicySpec(store_path=path, tag="empty"))


def test_mixed_rubrics_are_refused(tmp_path):
    path = tmp_path / "eval.sqlite"
    with EvaluationStore(path) as store:
        add_run(store, "fold", "three", {0: (1, 1, 1)})
        add_run(store, "fold", "mixed", {0: (1, 1, 1)})
        add_run(store, "fold", "mixed", {1: (1, 1)}, rubric=two_criterion_rubric())
        add_run(store, "fold2", "two", {1: (1, 1)}, rubric=two_criterion_rubric())
    with pytest.raises(ReportError, match=r"policy 'mixed'.*rubrics with different criteria"):
        load_policy(PolicySpec(store_path=path, tag="mixed"))
    three = load_policy(PolicySpec(store_path=path, tag="three"))
    two = load_policy(PolicySpec(store_path=path, tag="two"))
    with pytest.raises(ReportError, match=r"different criteria \(three: \['R1', 'R2', 'R3'\]; two: \['R1', 'R2'\]\)"):
        build_report([three, two], StatsConfig(), "t")
