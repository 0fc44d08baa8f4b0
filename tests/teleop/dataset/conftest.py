"""Fixtures: a saved two-episode dataset, built once per session and copied for each test."""

import shutil

import pytest

from teleop.dataset.durable import DurableDataset
from tests.teleop.dataset.helpers import record, snapshot, spec


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
