"""Fixtures of the review tests: a judged store (real judge run against the loopback API), copied per test."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from evaluation.episode_source import open_dataset
from evaluation.judge.run import run_judge
from evaluation.review.server import ReviewServer
from evaluation.rubric import load_rubric
from evaluation.store import EvaluationStore
from evaluation.testing.fake_api_script import Reply
from evaluation.testing.fake_messages_server import FakeMessagesServer
from tests.evaluation.judge.judge_testkit import judge_client, judge_config
from tests.support.judged_store import JUDGE_SCRIPT, UNCERTAIN
from tests.support.review_server import serving


@pytest.fixture(scope="session")
def judged_store_template(dataset_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding one real judge run (3 samples per episode, tag "smolvla") of the 5-episode dataset."""
    path = tmp_path_factory.mktemp("judged") / "fold_virtual.evaluation.sqlite"
    with FakeMessagesServer(expected_model="claude-sonnet-5-5") as server:
        for episode, samples in JUDGE_SCRIPT.items():
            replies = [
                Reply(scores=tuple(zip(("R1", "R2", "R3"), s, strict=True)), uncertain=UNCERTAIN.get((episode, k), ()))
                for k, s in enumerate(samples)
            ]
            server.script(*replies, episode=episode)
        config = judge_config(dataset_root, path, samples=3, concurrency=2, tag="smolvla")
        with EvaluationStore(path) as store:
            summary = run_judge(open_dataset(dataset_root), load_rubric(), config, store, judge_client(server))
        assert server.problems() == []
    assert summary.scored == 5
    return path


@pytest.fixture
def judged_store(judged_store_template: Path, tmp_path: Path) -> Path:
    """A private copy of the judged store (tests append overrides to it)."""
    path = tmp_path / judged_store_template.name
    shutil.copy(judged_store_template, path)
    return path


@pytest.fixture
def review_server(dataset_root: Path, judged_store: Path) -> Iterator[ReviewServer]:
    """The app over the 5-episode dataset and a private judged store, reviewer "tester"."""
    with serving(dataset_root, judged_store) as server:
        yield server
