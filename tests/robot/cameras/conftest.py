"""Fixtures for the camera tests: virtual cameras (real or manual clock) that always disconnect."""

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import pytest

from robot.cameras.config import VirtualCameraConfig
from robot.cameras.virtual.camera import VirtualCamera
from robot.cameras.virtual.joint_sources import constant_source
from robot.cameras.virtual.scene import VirtualScene
from tests.robot.cameras.camera_test_support import MakeCameras, ManualClock


@pytest.fixture
def manual_clock() -> Iterator[ManualClock]:
    clock = ManualClock()
    yield clock
    clock.release()


@pytest.fixture
def virtual_cameras() -> Iterator[MakeCameras]:
    """`make(configs, clock=None, epoch_s=None)`: connected virtual cameras sharing one scene."""
    made: list[VirtualCamera] = []
    clocks: list[ManualClock] = []

    def make(
        configs: Sequence[VirtualCameraConfig], clock: ManualClock | None = None, epoch_s: float | None = None
    ) -> list[VirtualCamera]:
        if clock is None:
            scene = VirtualScene(constant_source())
            cameras = [VirtualCamera(config, scene, epoch_s) for config in configs]
        else:
            clocks.append(clock)
            scene = VirtualScene(constant_source(), clock=clock)
            cameras = [VirtualCamera(config, scene, epoch_s, clock=clock, sleep=clock.sleep) for config in configs]
        made.extend(cameras)
        if clock is None:
            for camera in cameras:
                camera.connect()
            return cameras
        # connect() waits for a first frame, which comes only when the clock moves: connect in
        # threads while the test's thread moves time past every camera's first frame.
        with ThreadPoolExecutor(len(cameras)) as pool:
            connecting = [pool.submit(camera.connect) for camera in cameras]
            # All open at the same instant (each thread then sleeps towards its first frame) ...
            clock.advance_to(clock(), sleepers=len(cameras))
            # ... and time moves past every first frame (at most a period and its jitter away).
            clock.advance_to(clock() + max(1 / c.fps + c.jitter_s for c in configs), sleepers=len(cameras))
            for future in connecting:
                future.result()
        return cameras

    yield make
    for clock in clocks:
        clock.release()
    for camera in made:
        camera.disconnect()
