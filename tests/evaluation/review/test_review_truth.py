"""so101-review beside virtual ground truth: the list and the episode page show it per criterion, labelled.

A copy of the session's dataset carries truth in its quality cards; the store holds what
so101-judge --scorer=truth stored from them and a heuristic run, read through the app's HTTP client.
"""

import re
from dataclasses import replace
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from evaluation.episode_source import open_dataset
from evaluation.judge.command_line import CommandLine
from evaluation.judge.run import run_judge
from evaluation.judge.truth_run import read_truth, store_truth
from evaluation.overrides import OverrideStore
from evaluation.review.app import ReviewSettings, create_app
from evaluation.review.catalog import ReviewCatalog
from evaluation.rubric import load_rubric
from evaluation.store import EvaluationStore
from tests.evaluation.judge.judge_testkit import judge_config
from tests.support.truth_cards import copy_with_truth

TRUTHS = {0: (0.97, 0.91, 1.0), 1: (0.0, 0.0, 0.0), 2: (0.6, 0.2, 0.0), 3: (1.0, 0.95, 0.1)}  # episode 4: none


@pytest.fixture(scope="module")
def pages(dataset_root: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("review-truth")
    root = copy_with_truth(dataset_root, folder / "fold_virtual", TRUTHS, trimmed=(3,))
    store_path, rubric, source = folder / "fold.sqlite", load_rubric(), open_dataset(root)
    config = judge_config(root, store_path)
    with EvaluationStore(store_path) as store:
        truth = replace(config, scorer="truth")
        store_truth(read_truth(source, rubric, truth, CommandLine("so101-judge")), source, rubric, truth, store)
        run_judge(source, rubric, replace(config, scorer="heuristic"), store, None)
    with EvaluationStore(store_path) as store, OverrideStore(store) as overrides:
        app = create_app(ReviewCatalog(source, store), overrides, ReviewSettings(reviewer="ana"))
        with TestClient(app, base_url="http://127.0.0.1") as client:
            got = {path: client.get(path) for path in ("/", "/episodes/0", "/episodes/3", "/episodes/4")}
    assert {r.status_code for r in got.values()} == {200}
    return {path: r.text for path, r in got.items()}


def test_the_list_shows_truth_beside_the_scored_and_effective_scores(pages):
    listing = pages["/"]
    assert "scored → effective · virtual ground truth" in listing
    row0 = listing[listing.index('id="episode-0"') : listing.index('id="episode-1"')]
    assert re.findall(r"· truth ([0-9.]+)", row0) == ["0.97", "0.91", "1.00"]
    assert 'title="virtual ground truth (cloth_truth@1)"' in row0
    row3 = listing[listing.index('id="episode-3"') : listing.index('id="episode-4"')]
    assert 'title="virtual ground truth (cloth_truth@1, of the whole recording)"' in row3
    row4 = listing[listing.index('id="episode-4"') :]
    assert "· truth" not in row4  # no card carries its truth
    assert "tag heuristic" in row0  # the scores shown are still the heuristic's


def test_the_episode_page_labels_truth_per_criterion_and_never_makes_it_effective(pages):
    page = pages["/episodes/0"]
    assert '<span id="truth-meta">virtual ground truth: cloth_truth@1, cloth seed 1000</span>' in page
    assert re.findall(r'class="truth-score">([^<]+)<', page) == ["0.97", "0.91", "1.00"]
    assert set(re.findall(r'class="effective-score" data-source="([a-z]+)"', page)) <= {"heuristic", "none"}
    assert 'id="scored-by">heuristic<' in page
    assert "of the whole recording (trimmed after recording)" in pages["/episodes/3"]
    assert "truth-meta" not in pages["/episodes/4"]
