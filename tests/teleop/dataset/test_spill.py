"""A highlight's writer: frames offered faster than the ring takes them wait in a queue, none dropped.

A real dataset writer (its own process, a ring of 3 slots) is handed 40 frames at once: every one is
taken, the save waits until all are in the ring, and LeRobot reads back all 40 in order. With a queue
of 5, the frames beyond it (of 200 at once) are refused and counted, as the plain writer counts a full ring.
"""

from pathlib import Path

import numpy as np
import pytest

from teleop.dataset.spill import SpillingWriter
from teleop.dataset.writer_process import DatasetWriter
from tests.support.record_runs import load
from tests.teleop.dataset.helpers import TASK, frame, spec


@pytest.mark.slow
def test_forty_frames_at_once_are_all_saved_in_order(tmp_path: Path):
    root = tmp_path / "dataset"
    with DatasetWriter(spec(root, ring_s=0.1, repo_id="test/fold")) as inner:
        assert inner.spec.ring_frames == 3
        writer = SpillingWriter(inner, max_frames=100)
        writer.begin_episode(TASK)
        taken = [writer.add_frame(*frame(0, index)) for index in range(40)]
        assert all(taken)
        assert writer.spilled > 0, "the ring took them all: nothing was queued"
        saved = writer.save_episode({"frames": 40})
        assert (saved.frames, saved.dropped_frames) == (40, 0)
    dataset = load(root)
    states = np.stack([dataset.hf_dataset[i]["observation.state"].numpy() for i in range(len(dataset))])
    np.testing.assert_array_equal(states[:, 0], np.arange(40, dtype=np.float32))  # frame(0, i): joint 0 is i


@pytest.mark.slow
def test_beyond_the_queue_frames_are_refused_and_counted(tmp_path: Path):
    with DatasetWriter(spec(tmp_path / "dataset", ring_s=0.1)) as inner:
        writer = SpillingWriter(inner, max_frames=5)
        writer.begin_episode(TASK)
        taken = [writer.add_frame(*frame(0, index % 50)) for index in range(200)]  # far faster than it encodes
        assert taken.count(False) == writer.refused > 0
        assert writer.save_episode({}).frames == taken.count(True)
