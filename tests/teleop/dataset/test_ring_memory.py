"""The frame ring's memory: inherited by a forked writer (nameless, nothing left behind), named for a spawned one."""

import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from teleop.dataset.frame_ring import SHM_DIR, FrameRing
from tests.teleop.dataset.helpers import CAMERAS, frame

REPO = Path(__file__).resolve().parents[3]


def shm_entries() -> set[str]:
    return set(os.listdir(SHM_DIR))


def write_slot_in_child(ring: FrameRing) -> None:
    state, action, images, timing = frame(3, 7)
    ring.write(1, state, action, images, timing)


def test_a_forked_child_writes_into_the_inherited_ring_and_the_parent_reads_it():
    before = shm_entries()
    ring = FrameRing.create(CAMERAS, 3, prefault_slots=1, inherited=True)
    try:
        assert ring.name is None
        assert shm_entries() == before  # no file in /dev/shm to leave behind
        child = multiprocessing.get_context("fork").Process(target=write_slot_in_child, args=(ring,))
        child.start()
        child.join(60)
        assert child.exitcode == 0
        state, action, images, timing = ring.read(1)
        expected = frame(3, 7)
        np.testing.assert_array_equal(state, expected[0])
        np.testing.assert_array_equal(action, expected[1])
        for name, image in expected[2].items():
            np.testing.assert_array_equal(images[name], image)
        assert timing == pytest.approx(expected[3])
        del images
    finally:
        ring.close()
        ring.unlink()


def test_closing_an_inherited_ring_with_a_live_view_defers_the_unmap():
    ring = FrameRing.create(CAMERAS, 2, inherited=True)
    state, action, written, timing = frame(0, 5)
    ring.write(0, state, action, written, timing)
    images = ring.read(0)[2]
    ring.close()  # logged, not raised: the mapping goes when the view does
    np.testing.assert_array_equal(images["overhead"], written["overhead"])  # still mapped
    del images
    ring.close()
    ring.unlink()


def test_a_named_ring_is_attached_by_name_and_unlinked_by_its_owner():
    ring = FrameRing.create(CAMERAS, 2)
    try:
        assert ring.name in shm_entries()
        other = FrameRing.attach(ring.name, CAMERAS, 2)
        state, action, images, timing = frame(0, 2)
        other.write(0, state, action, images, timing)
        other.close()
        np.testing.assert_array_equal(ring.read(0)[0], state)
    finally:
        ring.close()
        ring.unlink()
    assert ring.name not in shm_entries()


# A fresh interpreter records an episode through a forked writer and reports what it left around.
PROBE = """
import os, sys
sys.path.insert(0, {repo!r})
from multiprocessing import resource_tracker
from teleop.dataset.writer_process import DatasetWriter
from tests.teleop.dataset.helpers import TASK, frame, spec
from pathlib import Path

def held_shm_files():
    # /dev/shm files this process and its children map or hold open (other processes on the machine,
    # another test worker's among them, make and remove their own there meanwhile).
    me = str(os.getpid())
    pids = [me] + [p for p in os.listdir("/proc") if p.isdigit() and stat_ppid(p) == me]
    held = set()
    for pid in pids:
        try:
            paths = [line.split(None, 5)[-1].strip() for line in open(f"/proc/{{pid}}/maps")]
            paths += [readlink(f"/proc/{{pid}}/fd/{{fd}}") for fd in os.listdir(f"/proc/{{pid}}/fd")]
        except OSError:  # the process ended meanwhile
            continue
        held |= {{path for path in paths if path.startswith("/dev/shm/") and not path.endswith("(deleted)")}}
    return held


def readlink(path):
    try:
        return os.readlink(path)
    except OSError:  # the descriptor closed meanwhile (listdir's own among them)
        return ""


def stat_ppid(pid):
    try:
        return open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[1].split()[1]
    except (OSError, IndexError):
        return None


if __name__ == "__main__":
    before = set(os.listdir("/dev/shm"))
    with DatasetWriter(spec(Path({root!r}))) as writer:
        writer.begin_episode(TASK)
        for index in range(3):
            assert writer.add_frame(*frame(0, index))
        during = held_shm_files()
        writer.save_episode({{"episode": 0}})
    print("tracker", resource_tracker._resource_tracker._pid)
    print("shm", sorted(during))
"""


@pytest.mark.slow  # a fresh interpreter imports LeRobot and starts a writer process
def test_a_forked_writer_needs_no_resource_tracker_and_no_dev_shm_file(tmp_path):
    probe = PROBE.format(repo=str(REPO), root=str(tmp_path / "ds"))
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    # A named block would have started multiprocessing's resource tracker (a whole interpreter, ~8 MB)
    # and put a psm_ file in /dev/shm for as long as the recording runs.
    assert "tracker None" in result.stdout
    assert "shm []" in result.stdout


# A fresh interpreter opens a forked writer, runs a full collection, and reports what stayed frozen.
# (What that collection copies is a measurement: benchmarks/record_writer.py's gc_collect_copied_mb.)
GC_PROBE = """
import gc, sys
sys.path.insert(0, {repo!r})
from teleop.dataset import writer_process
from teleop.dataset.writer_process import DatasetWriter
from tests.teleop.dataset.helpers import spec
from pathlib import Path

if __name__ == "__main__":
    writer_process._start_method = lambda: "fork"  # as so101-record opens it, before its threads
    with DatasetWriter(spec(Path({root!r}))) as writer:
        frozen = gc.get_freeze_count()
        gc.collect()  # what a long session's collector eventually does
        after_collect = gc.get_freeze_count()
    print("frozen", frozen, "after_collect", after_collect, "after_close", gc.get_freeze_count())
"""


@pytest.mark.slow  # a fresh interpreter imports LeRobot and starts a writer process
def test_a_collection_in_the_control_process_does_not_copy_the_pages_it_shares_with_the_writer(tmp_path):
    probe = GC_PROBE.format(repo=str(REPO), root=str(tmp_path / "ds"))
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    report = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines()}
    # Unfrozen, a collection visits torch's and LeRobot's objects and copies the pages it touches.
    frozen, _, after_collect, _, after_close = report["frozen"]
    assert int(frozen) > 100_000  # the heap was frozen while the writer ran...
    assert after_collect == frozen  # ...a collection left it so (it never walked those objects)...
    assert after_close == "0"  # ...and it is collectable again once the writer is gone
