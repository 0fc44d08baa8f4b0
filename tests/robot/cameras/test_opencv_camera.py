"""OpenCV cameras without a camera: a missing device for real, the rest through a fake capture.

The fake stands in for `cv2.VideoCapture` behind the small `VideoCaptureLike` seam. That is
acceptable only because the capture thread around it (`ThreadedCamera`: ring, stale detection,
bounded reconnect) is the same code the virtual cameras run for real in test_virtual_camera.py
and the contract suite; what only a real device can show is in the contract suite, marked
`hardware`.
"""

import logging
import threading
import time

import cv2
import numpy as np
import pytest

from robot.cameras.config import CaptureConfig, OpenCVCameraConfig
from robot.cameras.errors import (
    CameraConfigError,
    CameraDisconnectedError,
    CameraNotFoundError,
    CameraReadError,
    CameraStaleError,
)
from robot.cameras.opencv_camera import OpenCVCamera, OpenCVFrameSource

FAST = CaptureConfig(max_frame_age_s=0.25, reconnect_attempts=2, reconnect_delay_s=0.01)


def fourcc_code(text: str) -> float:
    return float(cv2.VideoWriter.fourcc(*text))


class FakeDevice:
    """A scripted camera device; `open` is the `open_capture` factory handed to the camera."""

    def __init__(self, width: int = 640, height: int = 480, fps: float = 30.0, fourcc: str = "MJPG") -> None:
        self.mode = {"width": width, "height": height, "fps": fps, "fourcc": fourcc}
        self.opened_with: list[tuple[object, int]] = []
        self.sets: list[int] = []
        self.releases = 0
        self.plugged = True
        self.failing_grabs = 0  # the next n grabs fail
        self.hang = threading.Event()  # while set, grab blocks (a stalled camera)
        self.events: list[str] = []

    def open(self, device: object, backend: int) -> "FakeCapture":
        self.opened_with.append((device, backend))
        return FakeCapture(self)


class FakeCapture:
    def __init__(self, device: FakeDevice) -> None:
        self.device = device

    def isOpened(self) -> bool:  # noqa: N802 (OpenCV's name)
        return self.device.plugged

    def set(self, prop: int, value: float) -> bool:
        self.device.sets.append(prop)
        return True

    def get(self, prop: int) -> float:
        mode = self.device.mode
        return {
            cv2.CAP_PROP_FOURCC: fourcc_code(mode["fourcc"]) if mode["fourcc"] else 0.0,
            cv2.CAP_PROP_FRAME_WIDTH: float(mode["width"]),
            cv2.CAP_PROP_FRAME_HEIGHT: float(mode["height"]),
            cv2.CAP_PROP_FPS: float(mode["fps"]),
        }[prop]

    def grab(self) -> bool:
        while self.device.hang.is_set():
            time.sleep(0.005)
        time.sleep(0.002)  # a frame period, shortened
        self.device.events.append("grab")
        if self.device.failing_grabs > 0 or not self.device.plugged:
            self.device.failing_grabs -= 1
            return False
        return True

    def retrieve(self) -> tuple[bool, np.ndarray | None]:
        self.device.events.append("retrieve")
        bgr = np.zeros((self.device.mode["height"], self.device.mode["width"], 3), np.uint8)
        bgr[..., 0] = 255  # blue, in OpenCV's BGR order
        return True, bgr

    def release(self) -> None:
        self.device.releases += 1


def config(**overrides: object) -> OpenCVCameraConfig:
    fields: dict[str, object] = {"name": "overhead", "device": "0", "capture": FAST, **overrides}
    return OpenCVCameraConfig(**fields)  # type: ignore[arg-type]


def test_a_missing_device_path_names_the_camera_and_the_next_step() -> None:
    camera = OpenCVCamera(config(device="/dev/v4l/by-id/no-such-camera"))  # the real cv2 path
    with pytest.raises(CameraNotFoundError) as raised:
        camera.connect()
    message = str(raised.value)
    assert "'overhead'" in message
    assert "/dev/v4l/by-id/no-such-camera does not exist" in message
    assert "v4l2-ctl --list-devices" in message
    assert "so101-doctor" in message
    assert not camera.is_connected


def test_an_index_that_does_not_open_is_not_found() -> None:
    device = FakeDevice()
    device.plugged = False
    with pytest.raises(CameraNotFoundError, match="could not open 3"):
        OpenCVFrameSource(config(device="3"), device.open).open()
    assert device.opened_with[0][0] == 3  # an index, not the string "3"
    assert device.releases == 1


def test_format_is_requested_before_size_and_rate() -> None:
    device = FakeDevice()
    source = OpenCVFrameSource(config(), device.open)
    source.open()
    assert device.sets == [cv2.CAP_PROP_FOURCC, cv2.CAP_PROP_FRAME_WIDTH, cv2.CAP_PROP_FRAME_HEIGHT, cv2.CAP_PROP_FPS]


def test_a_driver_that_refuses_mjpg_is_used_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    device = FakeDevice(fourcc="YUYV")
    with caplog.at_level(logging.WARNING):
        OpenCVFrameSource(config(), device.open).open()
    assert "asked for MJPG, the driver chose 'YUYV'" in caplog.text


def test_a_size_the_device_will_not_deliver_is_a_config_error() -> None:
    device = FakeDevice(width=1280, height=720)
    with pytest.raises(CameraConfigError, match=r"640x480.*1280x720.*--list-formats-ext"):
        OpenCVFrameSource(config(), device.open).open()
    assert device.releases == 1


def test_a_rate_the_device_will_not_deliver_is_a_config_error() -> None:
    with pytest.raises(CameraConfigError, match=r"asked for 30 fps.*delivers 15 fps"):
        OpenCVFrameSource(config(), FakeDevice(fps=15.0).open).open()


def test_an_unreported_rate_is_only_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        OpenCVFrameSource(config(), FakeDevice(fps=0.0).open).open()
    assert "does not report its rate" in caplog.text


def test_a_frame_is_stamped_after_grab_and_before_decode_and_converted_to_rgb() -> None:
    device = FakeDevice(width=32, height=24)

    def clock() -> float:
        device.events.append("clock")
        return 42.0

    source = OpenCVFrameSource(config(width=32, height=24), device.open, clock)
    source.open()
    first, second = source.read(), source.read()
    assert device.events[:3] == ["grab", "clock", "retrieve"]
    assert (first.capture_time_s, first.sequence, second.sequence) == (42.0, 0, 1)
    assert first.image.shape == (24, 32, 3)
    assert tuple(first.image[0, 0]) == (0, 0, 255)  # blue, now in RGB order


def test_failed_reads_are_typed() -> None:
    device = FakeDevice(width=32, height=24)
    source = OpenCVFrameSource(config(width=32, height=24), device.open)
    with pytest.raises(CameraDisconnectedError):
        source.read()  # not open
    source.open()
    device.failing_grabs = 1
    with pytest.raises(CameraReadError, match="grab"):
        source.read()
    device.mode["width"] = 64  # the device changed mode under us
    with pytest.raises(CameraReadError, match="shape"):
        source.read()


def test_read_failures_trigger_a_reconnect_that_recovers() -> None:
    device = FakeDevice(width=32, height=24)
    with OpenCVCamera(config(width=32, height=24), device.open) as camera:
        before = camera.latest().sequence
        device.failing_grabs = 3  # read_failures_before_reconnect
        deadline = time.monotonic() + 10
        while camera.reconnects == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05)
        assert camera.reconnects == 1
        assert camera.frames()[-1].sequence > before
        assert len(device.opened_with) == 2


def test_a_camera_that_stays_gone_is_disconnected_after_bounded_attempts() -> None:
    device = FakeDevice(width=32, height=24)
    camera = OpenCVCamera(config(width=32, height=24), device.open)
    camera.connect()
    try:
        device.plugged = False
        deadline = time.monotonic() + 10
        while camera.is_connected and time.monotonic() < deadline:
            time.sleep(0.01)
        with pytest.raises(CameraDisconnectedError, match=r"'overhead'.*2 reconnect attempt.*v4l2-ctl"):
            camera.latest()
        assert len(device.opened_with) == 3  # the first open and two attempts
    finally:
        camera.disconnect()
    assert device.releases >= 1


def test_a_stalled_camera_is_reported_stale() -> None:
    device = FakeDevice(width=32, height=24)
    camera = OpenCVCamera(config(width=32, height=24), device.open)
    camera.connect()
    try:
        device.hang.set()
        deadline = time.monotonic() + 10
        error = None
        while error is None and time.monotonic() < deadline:
            try:
                camera.latest()
            except CameraStaleError as stale:
                error = stale
            time.sleep(0.02)
        assert error is not None
        assert "'overhead'" in str(error)
        assert "so101-doctor" in str(error)
    finally:
        device.hang.clear()
        camera.disconnect()
