"""Crash safety of DurableDataset: SIGKILL at every step of an episode and of a save, full disks.

Each kill lands exactly where named: the victim (a forked copy of this process, LeRobot already
imported) arms `SO101_DATASET_FAULT=kill@<point>` and SIGKILLs itself there. After each, the next
open must give back the last committed dataset byte for byte, and a second open must change nothing.
"""

import os
import subprocess
import uuid

import pytest

from teleop.dataset.durable import DurableDataset
from teleop.dataset.errors import DiskFullError, ShortVideoError
from teleop.dataset.faults import ENV
from tests.teleop.dataset.helpers import TASK, check_loads, frame, record, run_killed, snapshot, spec

pytestmark = pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")


def reopen_and_check(root, expected_snapshot, rolled_back):
    """Open (repairing), check what was undone, then check a second open is a no-op."""
    with DurableDataset.open(spec(root)) as dataset:
        assert dataset.report.repair.rolled_back_episode == rolled_back
        assert dataset.report.episodes == 2
        first = dataset.report.repair
    assert snapshot(root) == expected_snapshot
    with DurableDataset.open(spec(root)) as dataset:
        assert not dataset.report.repair.changed
    assert snapshot(root) == expected_snapshot
    check_loads(root, [5, 7])
    return first


def test_kill_during_an_episode_loses_only_that_episode(committed):
    root, before = committed

    def victim():
        with DurableDataset.open(spec(root)) as dataset:
            dataset.begin_episode(TASK)
            for index in range(20):
                dataset.add_frame(*frame(2, index))

    assert run_killed(victim, "kill@frame:8") == -9
    assert any(path.name.startswith("tmp") for path in root.iterdir())  # the encoders' temp dirs
    report = reopen_and_check(root, before, rolled_back=None)
    assert report.removed
    assert all(path.startswith("tmp") for path in report.removed)


@pytest.mark.parametrize("point", ["save:journaled", "save:lerobot_saved", "save:finalized", "save:sidecars_written"])
def test_kill_during_a_save_is_rolled_back_at_the_next_open(committed, point):
    root, before = committed

    def victim():
        with DurableDataset.open(spec(root)) as dataset:
            record(dataset, 2, 6)

    assert run_killed(victim, f"kill@{point}") == -9
    assert snapshot(root) != before
    reopen_and_check(root, before, rolled_back=2)


def test_a_torn_info_json_is_restored(committed):
    """Power loss while LeRobot rewrote info.json in place: the journal's backup puts it back."""
    root, before = committed

    def victim():
        with DurableDataset.open(spec(root)) as dataset:
            record(dataset, 2, 6)

    assert run_killed(victim, "kill@save:lerobot_saved") == -9
    info = root / "meta/info.json"
    info.write_bytes(info.read_bytes()[: len(info.read_bytes()) // 2])
    report = reopen_and_check(root, before, rolled_back=2)
    assert "meta/info.json" in report.restored


def test_a_kill_during_the_repair_itself_is_finished_by_the_next_open(committed):
    root, before = committed

    def saver():
        with DurableDataset.open(spec(root)) as dataset:
            record(dataset, 2, 6)

    def repairer():
        DurableDataset.open(spec(root))

    assert run_killed(saver, "kill@save:finalized") == -9
    assert run_killed(repairer, "kill@repair:restored") == -9
    reopen_and_check(root, before, rolled_back=2)


def test_a_kill_right_after_the_commit_keeps_the_episode(committed):
    root, _ = committed

    def victim():
        with DurableDataset.open(spec(root)) as dataset:
            record(dataset, 2, 6)

    assert run_killed(victim, "kill@save:committed") == -9
    with DurableDataset.open(spec(root)) as dataset:
        assert dataset.report.episodes == 3
        assert not dataset.report.repair.changed
    check_loads(root, [5, 7, 6])


@pytest.mark.parametrize("point", ["save:journaled", "save:lerobot_saved", "save:sidecars_written"])
def test_a_full_disk_during_a_save_rolls_back_and_the_session_goes_on(committed, monkeypatch, point):
    """ENOSPC injected at a step of the save (a real full disk is tested below, where allowed)."""
    root, before = committed
    monkeypatch.setenv(ENV, f"enospc@{point}")
    with DurableDataset.open(spec(root)) as dataset:
        with pytest.raises(DiskFullError, match=r"disk is full.*2 saved episode.*intact.*Next: free disk space"):
            record(dataset, 2, 6)
        assert snapshot(root) == before
        assert record(dataset, 2, 4).index == 2  # the fault fired once; the next save works
    check_loads(root, [5, 7, 4])


def test_a_save_whose_videos_came_out_short_is_rolled_back_and_the_next_one_works(committed, monkeypatch):
    """A frame that never reached one camera's encoder: LeRobot would pair later frames with wrong images."""
    root, before = committed
    monkeypatch.setenv(ENV, "skip@encoder:feed")
    with DurableDataset.open(spec(root)) as dataset:
        with pytest.raises(
            ShortVideoError, match=r"episode 2's videos came out short \(\w+ 5 of 6 frames\).*rolled back"
        ):
            record(dataset, 2, 6)
        assert snapshot(root) == before  # nothing of it is left: not counted anywhere
        assert dataset.episodes == 2
        assert record(dataset, 2, 4).index == 2
    check_loads(root, [5, 7, 4])


@pytest.fixture
def tiny_disk(tmp_path):
    """A 3 MiB tmpfs (needs root and mount rights; skipped elsewhere)."""
    mount_point = tmp_path / f"disk-{uuid.uuid4().hex[:6]}"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount_point)], capture_output=True, check=False
    )
    if os.geteuid() != 0 or mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    yield mount_point
    subprocess.run(["umount", "-l", str(mount_point)], check=False)


def test_a_really_full_disk_keeps_the_saved_episodes(tiny_disk):
    root = tiny_disk / "ds"
    with DurableDataset.open(spec(root)) as dataset:
        record(dataset, 0, 5)
        record(dataset, 1, 7)
        before = snapshot(root)
        free = os.statvfs(tiny_disk).f_bavail * os.statvfs(tiny_disk).f_frsize
        filler = tiny_disk / "filler"
        filler.write_bytes(b"\0" * (free - 8 * 1024))  # leave 8 KiB: too little for a save
        with pytest.raises(DiskFullError, match="disk is full"):
            record(dataset, 2, 6)
        assert snapshot(root) == before
        filler.unlink()
        assert record(dataset, 2, 4).index == 2
    check_loads(root, [5, 7, 4])
