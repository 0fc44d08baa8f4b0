"""Fixtures: a saved two-episode dataset and one LeRobot wrote itself, built once per session, copied per test."""

import shutil

import pytest

from teleop.dataset.durable import DurableDataset
from tests.teleop.dataset.helpers import record, snapshot, spec, write_lerobot_dataset


@pytest.fixture(scope="session")
def two_episode_template(tmp_path_factory):
    """A dataset with two saved episodes (5 and 7 frames); never modified."""
    root = tmp_path_factory.mktemp("template") / "ds"
    with DurableDataset.open(spec(root)) as dataset:
        record(dataset, 0, 5)
        record(dataset, 1, 7)
    return root


@pytest.fixture
def committed(tmp_path, two_episode_template):
    """A private copy of the two-episode dataset, and its byte snapshot."""
    root = tmp_path / "ds"
    shutil.copytree(two_episode_template, root)
    return root, snapshot(root)


@pytest.fixture(scope="session")
def lerobot_template(tmp_path_factory):
    """A one-episode (4 frames) dataset written by LeRobot itself, without our journal; never modified."""
    root = tmp_path_factory.mktemp("lerobot") / "theirs"
    write_lerobot_dataset(root, 4)
    return root


@pytest.fixture
def theirs(tmp_path, lerobot_template):
    """A private copy of the dataset LeRobot wrote itself."""
    root = tmp_path / "theirs"
    shutil.copytree(lerobot_template, root)
    return root
