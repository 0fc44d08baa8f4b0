"""Virtual cameras: seeded schedules, absolute pacing, and the faults (drop, freeze, unplug)."""

import time
from collections.abc import Callable

import numpy as np
import pytest

from robot.cameras.config import CaptureConfig
from robot.cameras.errors import CameraDisconnectedError, CameraError, CameraStaleError
from robot.cameras.virtual.camera import VirtualCamera, VirtualFrameSource
from robot.cameras.virtual.joint_sources import constant_source
from robot.cameras.virtual.scene import VirtualScene
from robot.cameras.virtual.schedule import FrameSchedule
from robot.errors import RobotError
from robot.joint_values import JointValues
from tests.robot.cameras.camera_test_support import MakeCameras, ManualClock, run_until, virtual_config

T = 1 / 30


def wait_until(predicate: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def test_schedule_is_seeded_and_bounded() -> None:
    a = FrameSchedule(30.0, 5.0, phase_s=0.01, jitter_s=0.003, drop_rate=0.1, seed=7)
    b = FrameSchedule(30.0, 5.0, phase_s=0.01, jitter_s=0.003, drop_rate=0.1, seed=7)
    c = FrameSchedule(30.0, 5.0, phase_s=0.01, jitter_s=0.003, drop_rate=0.1, seed=8)
    slots = range(5000)
    assert [a.capture_time_s(k) for k in slots] == [b.capture_time_s(k) for k in slots]
    assert [a.is_dropped(k) for k in slots] != [c.is_dropped(k) for k in slots]
    offsets = np.array([a.capture_time_s(k) - (5.0 + 0.01 + k / 30) for k in slots])
    assert np.abs(offsets).max() <= 0.003
    assert 0.08 < np.mean([a.is_dropped(k) for k in slots]) < 0.12
    assert a.first_slot_after(5.0 + 0.01 + 2.5 * T) == 3


def test_source_paces_on_absolute_deadlines_despite_late_wakeups() -> None:
    # Every sleep overshoots by 5 ms (a busy host); relative pacing would drift 5 ms a frame.
    now = [100.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds + 0.005

    source = VirtualFrameSource(
        virtual_config("a"), VirtualScene(constant_source(), clock=lambda: now[0]), 100.0, lambda: now[0], sleep
    )
    source.open()
    frames = [source.read() for _ in range(300)]
    assert [f.sequence for f in frames] == list(range(300))  # nothing skipped, nothing repeated
    assert frames[-1].capture_time_s == pytest.approx(100.0 + 299 / 30)
    assert now[0] - frames[-1].capture_time_s < 0.01  # still on time after 10 s


def test_a_stalled_thread_skips_slots_like_full_driver_buffers() -> None:
    now = [100.0]
    source = VirtualFrameSource(
        virtual_config("a"),
        VirtualScene(constant_source(), clock=lambda: now[0]),
        100.0,
        lambda: now[0],
        lambda s: None,
    )
    source.open()
    assert source.read().sequence == 0
    now[0] += 0.5  # the host stalled for 15 periods
    frame = source.read()
    assert frame.sequence == 15  # slots 1..14 lost: a sequence gap
    assert frame.capture_time_s == pytest.approx(100.0 + 15 / 30)


def test_frames_follow_the_schedule(virtual_cameras: MakeCameras, manual_clock: ManualClock) -> None:
    config = virtual_config("a", phase_s=0.004, jitter_s=0.002, drop_rate=0.2, seed=3)
    (camera,) = virtual_cameras([config], clock=manual_clock, epoch_s=manual_clock())
    run_until(manual_clock, [camera], manual_clock() + 1.0)
    frames = camera.frames()
    schedule = camera.schedule
    first, last = frames[0].sequence, frames[-1].sequence
    assert [f.sequence for f in frames] == [k for k in range(first, last + 1) if not schedule.is_dropped(k)]
    assert all(f.capture_time_s == schedule.capture_time_s(f.sequence) for f in frames)
    image = frames[-1].image
    assert (image.shape, image.dtype, image.flags.writeable) == ((120, 160, 3), np.uint8, False)


def test_freeze_stops_new_frames_until_unfrozen(virtual_cameras: MakeCameras, manual_clock: ManualClock) -> None:
    (camera,) = virtual_cameras([virtual_config("a")], clock=manual_clock, epoch_s=manual_clock())
    manual_clock.advance_to(manual_clock() + 0.2, sleepers=1)
    camera.freeze()
    last = camera.latest().sequence
    manual_clock.advance_to(manual_clock() + 0.2, sleepers=1)
    assert camera.latest().sequence == last  # 0.2 s old: still within max_frame_age_s (0.25 s)
    manual_clock.advance_to(manual_clock() + 0.1, sleepers=1)
    with pytest.raises(CameraStaleError, match=r"'a'.*newest frame is 0\.3"):
        camera.latest()
    camera.unfreeze()
    manual_clock.advance_to(manual_clock() + 0.1, sleepers=1)
    assert camera.latest().sequence > last + 9  # resumed; the frozen slots are a gap


def test_scripted_freeze(virtual_cameras: MakeCameras, manual_clock: ManualClock) -> None:
    (camera,) = virtual_cameras([virtual_config("a", freeze_after_s=0.5)], clock=manual_clock)
    manual_clock.advance_to(manual_clock() + 0.45, sleepers=1)
    camera.latest()
    manual_clock.advance_to(manual_clock() + 0.4, sleepers=1)
    with pytest.raises(CameraStaleError):
        camera.latest()


def test_unplug_raises_disconnected_after_bounded_reconnects(virtual_cameras: MakeCameras) -> None:
    (camera,) = virtual_cameras([virtual_config("a")])
    camera.unplug()
    assert wait_until(lambda: not camera.is_connected)
    with pytest.raises(CameraDisconnectedError, match=r"'a'.*2 reconnect attempt.*v4l2-ctl --list-devices"):
        camera.latest()
    with pytest.raises(CameraDisconnectedError):
        camera.frames()
    assert not camera.wait_for_frame_after(0.0, 0.1)
    camera.replug()
    camera.connect()  # a failed camera can be connected again once it is back
    assert camera.latest().camera == "a"


def test_replug_within_the_reconnect_window_recovers(virtual_cameras: MakeCameras) -> None:
    capture = CaptureConfig(ring_size=64, reconnect_attempts=100, reconnect_delay_s=0.02)
    (camera,) = virtual_cameras([virtual_config("a", capture=capture)])
    before = camera.latest().sequence
    camera.unplug()
    time.sleep(0.2)
    camera.replug()
    assert wait_until(lambda: camera.reconnects == 1 and camera.frames()[-1].sequence > before + 3)
    assert camera.is_connected


def test_scripted_disconnect(virtual_cameras: MakeCameras) -> None:
    (camera,) = virtual_cameras([virtual_config("a", disconnect_after_s=0.1)])
    assert wait_until(lambda: not camera.is_connected)
    with pytest.raises(CameraDisconnectedError):
        camera.latest()


def test_a_failing_joint_source_fails_the_camera_with_its_name() -> None:
    def no_pose() -> JointValues:
        raise RobotError("the virtual cameras asked for the followers' pose before the rig connected")

    camera = VirtualCamera(virtual_config("a"), VirtualScene(no_pose))
    with pytest.raises(CameraError, match=r"'a'.*before the rig connected"):
        camera.connect()
    camera.disconnect()


def test_connect_while_unplugged_fails_at_once() -> None:
    camera = VirtualCamera(virtual_config("a"), VirtualScene(constant_source()))
    camera.unplug()
    with pytest.raises(CameraError, match="unplugged"):
        camera.connect()
    assert not camera.is_connected
