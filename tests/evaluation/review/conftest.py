"""Fixtures of the review tests: a judged store (real judge run against the loopback API), copied per test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evaluation.episode_source import open_dataset
from evaluation.judge_run import run_judge
from evaluation.rubric import load_rubric
from evaluation.store import EvaluationStore
from evaluation.testing.fake_api_script import Reply
from evaluation.testing.fake_messages_server import FakeMessagesServer
from tests.evaluation.judge_testkit import judge_client, judge_config

# Judge scores per episode (R1, R2, R3); episode 0 is routed on R3 (2 of 3 samples agree on 0.5).
JUDGE_SCRIPT = {
    0: ((1, 1, 0.5), (1, 1, 1), (1, 1, 0.5)),
    1: ((0, 0, 0),) * 3,
    2: ((0.5, 0.5, 0),) * 3,
    3: ((1, 1, 0),) * 3,
    4: ((1, 1, 0),) * 3,
}


@pytest.fixture(scope="session")
def judged_store_template(dataset_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding one real judge run (3 samples per episode, tag "smolvla") of the 5-episode dataset."""
    path = tmp_path_factory.mktemp("judged") / "fold_virtual.evaluation.sqlite"
    with FakeMessagesServer(expected_model="claude-sonnet-5-5") as server:
        for episode, samples in JUDGE_SCRIPT.items():
            server.script(*[Reply(scores=tuple(zip(("R1", "R2", "R3"), s, strict=True))) for s in samples],
                          episode=episode)  # fmt: skip
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
