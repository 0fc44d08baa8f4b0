"""A named frame ring (spawned writer) is sized to what /dev/shm can hold: a small tmpfs shrinks it
instead of crashing it. A forked writer's inherited ring is not in /dev/shm, so its size is kept."""

import logging
import os
import time

import pytest

from teleop.dataset import frame_ring, writer_process
from teleop.dataset.errors import SharedMemoryError
from teleop.dataset.frame_ring import slot_layout, slots_that_fit
from teleop.dataset.writer_process import DatasetWriter
from tests.teleop.dataset.helpers import CAMERAS, TASK, check_loads, frame, spec

SLOT_BYTES = 1_000_000


def tmpfs_with_free(monkeypatch, free_bytes: int) -> None:
    """os.statvfs as a tmpfs with `free_bytes` available reports it."""
    real = os.statvfs

    class Stat:
        f_frsize = 4096
        f_bavail = free_bytes // 4096

    monkeypatch.setattr(frame_ring.os, "statvfs", lambda path: Stat() if path == frame_ring.SHM_DIR else real(path))


def test_a_roomy_tmpfs_gets_every_slot_asked_for(monkeypatch):
    tmpfs_with_free(monkeypatch, 10 * 2**30)
    assert slots_that_fit(90, SLOT_BYTES) == 90


def test_a_small_tmpfs_gets_fewer_slots_and_a_warning(monkeypatch, caplog):
    tmpfs_with_free(monkeypatch, 64 * 2**20)  # Docker's default --shm-size
    with caplog.at_level(logging.WARNING, logger="teleop.dataset.frame_ring"):
        slots = slots_that_fit(90, SLOT_BYTES)
    assert slots == int(64 * 2**20 * 0.8) // SLOT_BYTES  # 53: room left for other programs
    assert "--shm-size" in caplog.text


def test_no_room_for_two_slots_is_a_clear_error(monkeypatch):
    tmpfs_with_free(monkeypatch, SLOT_BYTES)
    with pytest.raises(SharedMemoryError, match=r"/dev/shm has 1.0 MB free.*Next: .*--shm-size"):
        slots_that_fit(90, SLOT_BYTES)


@pytest.mark.slow  # starts a writer process
def test_a_spawned_writer_records_through_a_shrunken_ring(tmp_path, monkeypatch):
    slot_bytes = slot_layout(CAMERAS)[1]
    tmpfs_with_free(monkeypatch, (int(5 * slot_bytes / 0.8) // 4096 + 2) * 4096)  # room for 5 slots, not 6
    monkeypatch.setattr(writer_process, "_start_method", lambda: "spawn")  # as when threads already run
    writer = DatasetWriter(spec(tmp_path / "ds"))
    writer.open()
    try:
        assert writer.spec.ring_frames == 5  # and the writer process attached to the same 5
        writer.begin_episode(TASK)
        for index in range(12):
            deadline = time.monotonic() + 60
            while writer.backlog >= 5:  # paced as a control loop would be, so nothing is dropped
                assert time.monotonic() < deadline, "the writer process stopped taking frames"
                time.sleep(0.005)
            assert writer.add_frame(*frame(0, index))
        saved = writer.save_episode({"episode": 0, "keep": True})
        assert saved.dropped_frames == 0
    finally:
        writer.close()
    check_loads(tmp_path / "ds", [12])


@pytest.mark.slow  # starts a writer process
def test_a_forked_writer_keeps_its_whole_ring_whatever_dev_shm_holds(tmp_path, monkeypatch):
    tmpfs_with_free(monkeypatch, 4096)  # not one slot would fit in /dev/shm
    monkeypatch.setattr(writer_process, "_start_method", lambda: "fork")  # as a command opening it first
    wanted = spec(tmp_path / "ds").ring_frames
    with DatasetWriter(spec(tmp_path / "ds")) as writer:
        assert writer.spec.ring_frames == wanted
        writer.begin_episode(TASK)
        for index in range(4):
            assert writer.add_frame(*frame(0, index))
        assert writer.save_episode({"episode": 0}).frames == 4
    check_loads(tmp_path / "ds", [4])
