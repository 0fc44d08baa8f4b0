"""DatasetWriter: the dataset written from a separate process, its errors typed, its death noticed."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from teleop.dataset.durable import DurableDataset
from teleop.dataset.errors import (
    DiskFullError,
    FrameError,
    IncompatibleDatasetError,
    WriterProcessError,
    WriterStateError,
)
from teleop.dataset.faults import ENV
from teleop.dataset.sidecar import read_quality, read_timing
from teleop.dataset.writer_process import DatasetWriter
from tests.teleop.dataset.helpers import TASK, check_loads, frame, record, snapshot, spec

pytestmark = pytest.mark.slow  # each test starts a writer process (imports LeRobot: seconds)


def wait_until_stopped(pid: int, timeout_s: float = 60.0) -> None:
    """Wait for a process to be in the stopped state (it SIGSTOPped itself at a fault point)."""
    deadline = time.monotonic() + timeout_s
    while Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T":
        assert time.monotonic() < deadline, "the writer never reached its fault point"
        time.sleep(0.02)


def add_until_refused(writer: DatasetWriter) -> None:
    """Keep calling add_frame (it never blocks) until it raises; the kernel reports the death quickly."""
    for _ in range(1000):
        writer.add_frame(*frame(2, 0))
        time.sleep(0.01)
    pytest.fail("add_frame never noticed that the writer process died")


def save_killed_at(root: Path, point: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Record episode 2 (6 frames) with the writer killed at `point` of its save: the save fails typed."""
    monkeypatch.setenv(ENV, f"kill@{point}")
    writer = DatasetWriter(spec(root))
    writer.open()
    with pytest.raises(WriterProcessError, match="-9"):
        record(writer, 2, 6)
    writer.close()
    monkeypatch.delenv(ENV)


def test_round_trip_through_the_writer_process(tmp_path):
    root = tmp_path / "ds"
    state, action, images, _ = frame(0, 0)  # one set of buffers, reused for every frame
    with DatasetWriter(spec(root, resume=False)) as writer:
        assert writer.report.created
        assert writer.report.episodes == 0
        assert writer.pid != os.getpid()
        writer.begin_episode(TASK)
        for index in range(6):
            fresh = frame(0, index)
            state[:], action[:] = fresh[0], fresh[1]
            for name, image in fresh[2].items():
                images[name][:] = image
            assert writer.add_frame(state, action, images, fresh[3])
        first = writer.save_episode({"episode": 0})
        second = record(writer, 1, 9)
        writer.begin_episode(TASK)
        with pytest.raises(FrameError, match="camera"):
            writer.add_frame(*frame(2, 0)[:2], {}, {})
        writer.discard_episode()
        with pytest.raises(WriterStateError, match="begin_episode"):
            writer.add_frame(*frame(2, 0))
    assert (first.index, first.frames, second.index, second.frames) == (0, 6, 1, 9)
    assert first.dropped_frames == first.encoder_dropped_frames == 0
    assert second.save_s > 0
    check_loads(root, [6, 9])
    assert read_timing(root, 1)["bus_read_s"].shape == (9,)
    assert read_quality(root, 0)["episode"] == 0
    with pytest.raises(WriterStateError, match="closed"):
        writer.begin_episode(TASK)


def test_a_full_disk_in_the_writer_comes_back_typed_and_recording_goes_on(committed, monkeypatch):
    root, before = committed
    monkeypatch.setenv(ENV, "enospc@save:lerobot_saved")  # inherited by the writer process
    with DatasetWriter(spec(root)) as writer:
        with pytest.raises(DiskFullError, match="2 saved episode"):
            record(writer, 2, 6)
        assert snapshot(root) == before
        assert record(writer, 2, 4).index == 2
    check_loads(root, [5, 7, 4])


def test_a_killed_writer_is_reported_at_the_next_call_and_repaired_at_the_next_open(committed, monkeypatch):
    root, before = committed
    monkeypatch.setenv(ENV, "stop@frame:3")
    writer = DatasetWriter(spec(root, ring_s=0.2))  # 6 slots
    writer.open()
    try:
        writer.begin_episode(TASK)
        assert all(writer.add_frame(*frame(2, index)) for index in range(3))
        wait_until_stopped(writer.pid)
        # It stopped holding frame 3's slot and frees no more: 5 slots left, then frames are
        # refused and counted.
        taken = [writer.add_frame(*frame(2, index)) for index in range(3, 12)]
        assert taken == [True] * 5 + [False] * 4
        assert writer.dropped_frames == 4
        assert writer.backlog == 6
    finally:
        os.kill(writer.pid, signal.SIGKILL)
    with pytest.raises(WriterProcessError, match=r"died \(exit code -9"):
        add_until_refused(writer)
    with pytest.raises(WriterProcessError):
        writer.save_episode({})
    writer.close()
    with DurableDataset.open(spec(root)) as dataset:
        assert dataset.report.episodes == 2
        assert dataset.report.repair.rolled_back_episode is None
    assert snapshot(root) == before
    check_loads(root, [5, 7])


def test_a_writer_killed_during_a_save_fails_the_save_and_the_next_open_rolls_it_back(committed, monkeypatch):
    root, before = committed
    save_killed_at(root, "save:lerobot_saved", monkeypatch)
    debris = snapshot(root)
    assert debris != before
    # Errors at open come back typed too; a refused open changes nothing, not even the pending repair.
    with pytest.raises(IncompatibleDatasetError, match="fps: the dataset has 30, this run asks for 15"):
        DatasetWriter(spec(root, fps=15)).open()
    assert snapshot(root) == debris
    with DurableDataset.open(spec(root)) as dataset:
        assert dataset.report.repair.rolled_back_episode == 2
        assert dataset.report.episodes == 2
        assert snapshot(root) == before
        assert record(dataset, 2, 3).index == 2
    check_loads(root, [5, 7, 3])


def test_a_save_returns_once_the_writer_is_ready_for_the_next_episode(committed, monkeypatch):
    # The writer reopens LeRobot before it answers, so a next episode begun at once is taken at once
    # (not queued in the ring for the reopen's ~0.3 s); dying there loses nothing already committed.
    root, _ = committed
    save_killed_at(root, "save:reopened", monkeypatch)
    with DurableDataset.open(spec(root)) as dataset:
        assert dataset.report.repair.rolled_back_episode is None
        assert dataset.report.episodes == 3  # episode 2 was durable before the reopen
    check_loads(root, [5, 7, 6])


RECORDER = """
import sys, time
from pathlib import Path
sys.path.insert(0, {repo!r})
from teleop.dataset.writer_process import DatasetWriter
from tests.teleop.dataset.helpers import TASK, frame, spec
writer = DatasetWriter(spec(Path({root!r})))
writer.open()
writer.begin_episode(TASK)
for index in range(5):
    writer.add_frame(*frame(2, index))
print(writer.pid, flush=True)
time.sleep(600)
"""


def process_gone(pid: int) -> bool:
    """Exited (or a zombie nobody reaped yet)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def test_when_the_recorder_is_killed_its_writer_exits_and_the_dataset_opens_clean(committed):
    root, before = committed
    repo = str(Path(__file__).resolve().parents[3])
    script = RECORDER.format(repo=repo, root=str(root))
    recorder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        writer_pid = int(recorder.stdout.readline())
    finally:
        recorder.kill()  # kill -9 of the recording process, mid-episode
        recorder.wait()
    for _ in range(600):
        if process_gone(writer_pid):
            break
        time.sleep(0.1)
    assert process_gone(writer_pid), "the orphaned writer process did not exit"
    with DurableDataset.open(spec(root)) as dataset:
        assert dataset.report.episodes == 2
        assert dataset.report.repair.rolled_back_episode is None
    assert snapshot(root) == before
    check_loads(root, [5, 7])
