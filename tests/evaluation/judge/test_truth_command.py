"""so101-judge --scorer=truth through its entry point: the quality cards' virtual ground truth goes to the store.

Copies of the session's synthetic dataset get quality cards with truth (tests/support/truth_cards.py).
"""

import csv
from pathlib import Path

import pytest

from evaluation.commands.judge import main
from evaluation.overrides import effective_scores
from evaluation.store import EvaluationStore
from robot.shell.exit_codes import Exit
from tests.support.truth_cards import copy_with_truth, make_stale

# Truth scores (R1, R2, R3) per episode; episode 3 was trimmed after recording.
TRUTHS = {0: (0.97, 0.91, 1.0), 1: (0.0, 0.0, 0.0), 2: (0.6, 0.2, 0.0), 3: (1.0, 0.95, 0.1), 4: (0.98, 0.9, 0.88)}


def _run(root: Path, store: Path, capsys, *extra: str) -> tuple[int, list[str]]:
    code = main([f"--dataset.root={root}", f"--store_path={store}", "--scorer=truth", *extra])
    captured = capsys.readouterr()  # what it stored on stdout, its error line on stderr
    return code, (captured.out + captured.err).strip().splitlines()


@pytest.fixture(scope="module")
def truth_root(dataset_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_with_truth(dataset_root, tmp_path_factory.mktemp("truth") / "fold_virtual", TRUTHS, trimmed=(3,))


def test_truth_is_stored_as_its_own_scorer_with_the_cards_values_and_label(truth_root, tmp_path, capsys):
    store_path, csv_path = tmp_path / "s.sqlite", tmp_path / "scores.csv"
    code, out = _run(truth_root, store_path, capsys, f"--export.csv_path={csv_path}")
    assert code == Exit.DONE
    text = "\n".join(out)
    assert "episode 0: R1=0.97 R2=0.91 R3=1.00 (virtual ground truth, cloth_truth@1, seed 1000)" in text
    assert "episode 3: R1=1.00 R2=0.95 R3=0.10 (virtual ground truth, cloth_truth@1, seed 1003; of the whole" in text
    assert "stored the virtual ground truth of 5 episode(s) as scorer 'truth'" in text
    with EvaluationStore(store_path) as store:
        runs = store.query("SELECT scorer, model, mode, sdk_version FROM runs")
        assert [tuple(r) for r in runs] == [("truth", "cloth_truth@1", "offline", "")]
        rows = store.query(
            "SELECT e.episode_index, s.criterion, s.score, s.source, e.routed, e.cost_usd FROM scores s"
            " JOIN episode_results e ON e.id = s.result_id ORDER BY e.episode_index, s.criterion"
        )
        stored = {(r["episode_index"], r["criterion"]): r["score"] for r in rows}
        assert stored == {(i, c): v for i, s in TRUTHS.items() for c, v in zip(("R1", "R2", "R3"), s, strict=True)}
        assert {(r["source"], r["routed"], r["cost_usd"]) for r in rows} == {("truth", 0, 0.0)}
        assert effective_scores(store, "fold_virtual") == {}  # a reference: never a score a person overrides
    exported = list(csv.DictReader(csv_path.open()))
    assert {(r["scorer"], r["scored_by"]) for r in exported} == {("truth", "virtual ground truth")}
    # The same command again stores nothing new.
    code, out = _run(truth_root, store_path, capsys)
    assert code == Exit.DONE
    assert out[-1].startswith("stored the virtual ground truth of 0 episode(s) as scorer 'truth', 5 already stored")


def test_a_dataset_without_truth_is_refused_in_one_line(dataset_root, tmp_path, capsys):
    store_path = tmp_path / "s.sqlite"
    code, out = _run(dataset_root, store_path, capsys)
    assert code == Exit.FAILED
    assert len(out) == 1, out
    assert out[0].startswith(f"error: no episode of {dataset_root} carries virtual ground truth: it was not recorded")
    assert out[0].endswith(
        f"--scorer=heuristic or so101-judge --dataset.root={dataset_root} --store_path={store_path} --scorer=llm"
    )
    assert not store_path.exists()


def test_a_definition_the_code_does_not_know_is_refused_and_nothing_is_stored(dataset_root, tmp_path, capsys):
    root = copy_with_truth(dataset_root, tmp_path / "fold_future", {0: TRUTHS[0]}, definition="cloth_truth@9")
    store_path = tmp_path / "s.sqlite"
    code, out = _run(root, store_path, capsys)
    assert code == Exit.FAILED
    assert len(out) == 1, out
    assert out[0].startswith(f"error: episode 0 of {root}: its truth definition 'cloth_truth@9' is unknown")
    assert "--scorer=heuristic" in out[0]
    assert not store_path.exists()


def test_an_episode_with_a_stale_card_is_skipped_and_named(dataset_root, tmp_path, capsys):
    root = copy_with_truth(dataset_root, tmp_path / "fold_edited", {i: TRUTHS[i] for i in (0, 1, 2, 4)})
    make_stale(root, 2)
    store_path = tmp_path / "s.sqlite"
    code, out = _run(root, store_path, capsys)
    assert code == Exit.PARTIAL
    text = "\n".join(out)
    assert "skipped episode 2: its quality card describes another episode (its sidecar describes 91 frames" in text
    assert "no virtual ground truth for episode(s) 3: no quality card carries it" in text
    with EvaluationStore(store_path) as store:
        assert [r[0] for r in store.query("SELECT episode_index FROM episode_results ORDER BY 1")] == [0, 1, 4]
