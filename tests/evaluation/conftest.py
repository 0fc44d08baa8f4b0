"""Fixtures of the evaluation tests: one small synthetic dataset per session, a loopback Messages API."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from evaluation.testing.fake_messages_server import FakeMessagesServer
from evaluation.testing.synthetic_dataset import write_synthetic_dataset
from tests.evaluation.judge.judge_testkit import FRAMES_PER_EPISODE, SCENARIOS


@pytest.fixture(scope="session")
def dataset_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finalised 5-episode dataset (96x128 video, 3 s per episode). Read-only: do not modify."""
    return write_synthetic_dataset(tmp_path_factory.mktemp("datasets") / "fold_virtual", SCENARIOS, FRAMES_PER_EPISODE)


@pytest.fixture
def server() -> Iterator[FakeMessagesServer]:
    """A loopback Messages API that rejects any request the judge must not send."""
    with FakeMessagesServer(expected_model="claude-sonnet-5-5") as fake:
        yield fake
