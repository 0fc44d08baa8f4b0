"""Scores follow their episodes into a curated dataset: a real judge run and an override, so101-edit, then the carry.

The source is the 5-episode dataset with a store holding a real judge run (3 samples per episode,
through the loopback API) and one person's override. so101-edit drops episode 1 and trims episode 3;
the new dataset's store then gets the judge results, calls and override of the three episodes kept
whole (bound to their new index and fingerprint), the trimmed one starts unscored, the source's
store is not written, and the judge skips exactly the carried episodes.
"""

import hashlib
import shutil
from pathlib import Path

import pytest

from evaluation.carry import carry_scores
from evaluation.currency import episodes_now
from evaluation.episode_source import open_dataset
from evaluation.judge.config import judgment_hash
from evaluation.judge.run import select_pending
from evaluation.overrides import OverrideStore, effective_scores
from evaluation.rubric import load_rubric
from evaluation.store import EvaluationStore, default_store_path
from teleop.commands.edit import main as edit_main
from teleop.dataset.lineage import read_lineage
from tests.evaluation.judge.judge_testkit import judge_config

pytestmark = pytest.mark.slow
KEPT = {0: 0, 1: 2, 2: 3, 3: 4}  # new episode -> source episode (source 1 dropped, source 3 trimmed)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def curated(dataset_root: Path, judged_store_template: Path, tmp_path_factory) -> tuple[Path, Path]:
    """(source, curated): the source copied with its judged store and an override, then edited."""
    source = tmp_path_factory.mktemp("carry") / dataset_root.name
    shutil.copytree(dataset_root, source)
    shutil.copy(judged_store_template, default_store_path(source))
    opened = open_dataset(source)
    with EvaluationStore(default_store_path(source)) as store, OverrideStore(store) as overrides:
        old = effective_scores(store, opened.dataset_id, episodes_now(opened))[2]["R1"].effective
        overrides.record(
            opened.dataset_id,
            2,
            "R1",
            0.0 if old else 1.0,
            "other",
            "the cloth slipped",
            "tester",
            old,
            fingerprint=opened.fingerprint(opened.episode(2)),
            dataset_root=str(source),
        )
    out = source.parent / "fold_clean"
    code = edit_main(
        [
            f"--dataset.root={source}",
            "--dataset.repo_id=test/fold",
            "--drop=1",
            "--trim=3:5:80",
            f"--new_dataset.root={out}",
            "--new_dataset.repo_id=test/fold_clean",
        ]
    )
    assert code == 0
    return source, out


def test_whole_episodes_bring_their_scores_and_the_trimmed_one_starts_unscored(curated):
    source, out = curated
    assert [(o.episode_index, o.source_episode, o.whole) for o in read_lineage(out)] == [
        (0, 0, True),
        (1, 2, True),
        (2, 3, False),
        (3, 4, True),
    ]
    source_store = default_store_path(source)
    before = _sha(source_store)
    new = open_dataset(out)
    report = carry_scores(new, default_store_path(out))
    assert report.carried == [(0, 1, 0), (1, 1, 1), (3, 1, 0)]
    assert report.notes == ["1 trimmed episode(s) start unscored (their frames changed): [2]"]
    assert _sha(source_store) == before  # the source's store is only read
    old = open_dataset(source)
    with EvaluationStore(source_store) as s:
        was = effective_scores(s, old.dataset_id, episodes_now(old))
        calls_before = {i: len(s.query("SELECT 1 FROM calls WHERE episode_index = ?", (i,))) for i in KEPT.values()}
    with EvaluationStore(default_store_path(out)) as s:
        now = effective_scores(s, new.dataset_id, episodes_now(new))
        calls_after = {i: len(s.query("SELECT 1 FROM calls WHERE episode_index = ?", (i,))) for i in KEPT}
        runs = s.query("SELECT mode, dataset_id, tag FROM runs")
    assert sorted(now) == [0, 1, 3]
    for new_index in (0, 1, 3):
        assert {c: (e.effective, e.source) for c, e in now[new_index].items()} == {
            c: (e.effective, e.source) for c, e in was[KEPT[new_index]].items()
        }
        assert calls_after[new_index] == calls_before[KEPT[new_index]] > 0  # the samples the episode page shows
    assert now[1]["R1"].overridden_by.note == "the cloth slipped"
    assert now[1]["R1"].overridden_by.episode_fingerprint == new.fingerprint(new.episode(1))
    assert [(r["mode"], r["dataset_id"], r["tag"]) for r in runs] == [("carried", "fold_clean", "smolvla")]
    assert carry_scores(new, default_store_path(out)).carried == []  # once only


def test_the_judge_skips_the_carried_episodes_and_judges_the_trimmed_one(curated):
    _, out = curated
    new = open_dataset(out)
    carry_scores(new, default_store_path(out))
    config = judge_config(out, default_store_path(out), samples=3, concurrency=2, tag="smolvla")
    with EvaluationStore(default_store_path(out)) as store:
        pending, skipped = select_pending(new, config, store, judgment_hash(config, load_rubric()))
    assert ([ep.index for ep, _ in pending], skipped) == ([2], 3)
