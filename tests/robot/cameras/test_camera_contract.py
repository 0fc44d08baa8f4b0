"""The `Camera` contract, one suite for every implementation: virtual always, OpenCV on hardware.

Run the hardware half with a camera attached:
    SO101_TEST_CAMERA=/dev/video0 .venv/bin/pytest tests/robot/cameras -m hardware
"""

import itertools
import os
import time
from collections.abc import Iterator

import numpy as np
import pytest

from robot.cameras.camera import Camera
from robot.cameras.config import CaptureConfig, OpenCVCameraConfig
from robot.cameras.errors import CameraDisconnectedError, CameraError
from robot.cameras.opencv_camera import OpenCVCamera
from robot.cameras.virtual.camera import VirtualCamera
from robot.cameras.virtual.joint_sources import constant_source
from robot.cameras.virtual.scene import VirtualScene
from tests.robot.cameras.camera_test_support import virtual_config


def _virtual() -> Camera:
    # A generous staleness bound: the contract is not about staleness, and CI machines stall.
    capture = CaptureConfig(max_frame_age_s=2.0)
    return VirtualCamera(virtual_config("contract", capture=capture), VirtualScene(constant_source()))


def _opencv() -> Camera:
    device = os.environ.get("SO101_TEST_CAMERA")
    if not device:
        pytest.skip("set SO101_TEST_CAMERA to a camera's device path or index")
    return OpenCVCamera(OpenCVCameraConfig(name="contract", device=device))


@pytest.fixture(params=[_virtual, pytest.param(_opencv, marks=pytest.mark.hardware)], ids=["virtual", "opencv"])
def camera(request: pytest.FixtureRequest) -> Iterator[Camera]:
    device = request.param()
    yield device
    device.disconnect()


def test_is_a_camera(camera: Camera) -> None:
    assert isinstance(camera, Camera)
    assert camera.fps > 0
    assert camera.width > 0
    assert camera.height > 0


def test_connect_delivers_rgb_frames_with_capture_times_and_sequences(camera: Camera) -> None:
    before_s = time.monotonic()
    camera.connect()
    assert camera.is_connected
    assert camera.wait_for_frame_after(time.monotonic(), timeout_s=5.0)
    frame = camera.latest()
    assert frame.camera == camera.name
    assert frame.image.shape == (camera.height, camera.width, 3)
    assert frame.image.dtype == np.uint8
    assert not frame.image.flags.writeable
    assert before_s - 1.0 < frame.capture_time_s <= time.monotonic() + 0.1
    frames = camera.frames()
    assert frames[-1] is frame or frames[-1].sequence > frame.sequence
    assert all(b.sequence > a.sequence for a, b in itertools.pairwise(frames))
    assert all(b.capture_time_s > a.capture_time_s for a, b in itertools.pairwise(frames))


def test_wait_for_frame_after_times_out_for_the_far_future(camera: Camera) -> None:
    camera.connect()
    assert not camera.wait_for_frame_after(time.monotonic() + 60.0, timeout_s=0.05)


def test_connect_twice_is_refused_and_disconnect_twice_is_fine(camera: Camera) -> None:
    camera.connect()
    with pytest.raises(CameraError, match="connect"):
        camera.connect()
    camera.disconnect()
    camera.disconnect()
    assert not camera.is_connected


def test_reads_after_disconnect_raise(camera: Camera) -> None:
    with camera:
        camera.latest()
    with pytest.raises(CameraDisconnectedError, match="not connected"):
        camera.latest()
    with pytest.raises(CameraDisconnectedError):
        camera.frames()
    assert not camera.wait_for_frame_after(0.0, 0.01)


def test_reconnect_after_disconnect(camera: Camera) -> None:
    with camera:
        first = camera.latest()
    with camera:
        assert camera.wait_for_frame_after(first.capture_time_s + 1e-6, timeout_s=5.0)
        assert camera.latest().capture_time_s > first.capture_time_s
