"""USB cameras through OpenCV: MJPG preferred, size and rate requested and verified, stamped at grab.

    with OpenCVCamera(OpenCVCameraConfig(name="overhead", device="/dev/video0")) as camera:
        frame = camera.latest()  # Frame(image=RGB uint8, capture_time_s=monotonic, sequence)

The capture time is `time.monotonic()` taken right after `grab()` returns, before `retrieve()`
decodes the MJPG: decode time (about 3 ms) does not leak into the timestamp. Sequence numbers count
delivered frames: OpenCV does not report frames the camera lost, so a real camera shows no gaps;
the doctor compares the achieved rate with the nominal one instead.
"""

import logging
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import cv2
import numpy as np

from robot.cameras.config import OpenCVCameraConfig
from robot.cameras.errors import (
    CameraConfigError,
    CameraDisconnectedError,
    CameraNotFoundError,
    CameraReadError,
)
from robot.cameras.frame import Frame
from robot.cameras.threaded import ThreadedCamera

logger = logging.getLogger(__name__)

# OpenCV's V4L2 backend waits this long (in whole seconds, default 10) for each frame of a stalled
# camera and ignores CAP_PROP_READ_TIMEOUT_MSEC; it reads the variable once, at the first capture.
_V4L_SELECT_TIMEOUT_ENV = "OPENCV_VIDEOIO_V4L_SELECT_TIMEOUT"
_V4L_SELECT_TIMEOUT_S = "1"
_FPS_TOLERANCE = 0.5  # a driver reporting 29.97 for 30 is fine, frames per second
# A driver rounds a control to its step (focus often moves in 5s): that much difference is "applied".
_CONTROL_TOLERANCE = 5.0
_CONTROL_TOLERANCE_FRACTION = 0.05
# OpenCV's V4L2 backend passes CAP_PROP_AUTO_EXPOSURE to V4L2's exposure_auto unchanged: 1 is manual
# (3, aperture priority, is UVC's auto). CAP_PROP_AUTOFOCUS is focus_auto: 0 is manual.
_V4L2_EXPOSURE_MANUAL = 1.0
_V4L2_AUTOFOCUS_OFF = 0.0


@dataclass(frozen=True)
class _Control:
    """One optional camera control: its config field, OpenCV property, and the auto mode it turns off."""

    field: str
    prop: int
    mode_prop: int = -1
    manual_mode: float | None = None  # None: the control has no auto mode to turn off
    mode_name: str = ""


_CONTROLS = (
    _Control("exposure", cv2.CAP_PROP_EXPOSURE, cv2.CAP_PROP_AUTO_EXPOSURE, _V4L2_EXPOSURE_MANUAL, "manual exposure"),
    _Control("gain", cv2.CAP_PROP_GAIN),
    _Control("focus", cv2.CAP_PROP_FOCUS, cv2.CAP_PROP_AUTOFOCUS, _V4L2_AUTOFOCUS_OFF, "turning autofocus off"),
)


class VideoCaptureLike(Protocol):
    """The part of `cv2.VideoCapture` this module uses (tests inject a fake through it)."""

    def isOpened(self) -> bool: ...  # noqa: D102, N802 (OpenCV's names)

    def set(self, prop: int, value: float) -> bool: ...  # noqa: D102

    def get(self, prop: int) -> float: ...  # noqa: D102

    def grab(self) -> bool: ...  # noqa: D102

    def retrieve(self) -> tuple[bool, np.ndarray | None]: ...  # noqa: D102

    def release(self) -> None: ...  # noqa: D102


OpenCapture = Callable[[int | str, int], VideoCaptureLike]  # (device, backend) -> capture


def open_cv2_capture(device: int | str, backend: int) -> VideoCaptureLike:
    """The real thing: `cv2.VideoCapture(device, backend)`."""
    return cv2.VideoCapture(device, backend)


def fourcc_text(code: float) -> str:
    """CAP_PROP_FOURCC's number as its four letters ("MJPG"); "" for none."""
    value = int(code)
    return "".join(chr((value >> (8 * i)) & 0xFF) for i in range(4)).strip("\x00")


class OpenCVFrameSource:
    """A `FrameSource` for one OpenCV capture device."""

    def __init__(
        self,
        config: OpenCVCameraConfig,
        open_capture: OpenCapture = open_cv2_capture,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._config = config
        self._open_capture = open_capture
        self._clock = clock
        self._capture: VideoCaptureLike | None = None
        self._sequence = -1
        device = config.device
        self._device: int | str = int(device) if device.isdigit() else device
        self._backend = cv2.CAP_V4L2 if sys.platform.startswith("linux") else cv2.CAP_ANY

    def open(self) -> None:
        """Open and configure the device (see `FrameSource`)."""
        name, device = self._config.name, self._device
        if isinstance(device, str) and not os.path.exists(device):
            raise CameraNotFoundError(name, f"device {device} does not exist")
        os.environ.setdefault(_V4L_SELECT_TIMEOUT_ENV, _V4L_SELECT_TIMEOUT_S)
        capture = self._open_capture(device, self._backend)
        if not capture.isOpened():
            capture.release()
            raise CameraNotFoundError(
                name, f"could not open {device} (unplugged, not a capture node, or busy in another program)"
            )
        try:
            self._configure(capture)
        except Exception:
            capture.release()
            raise
        self._capture = capture

    def _configure(self, capture: VideoCaptureLike) -> None:
        config, device = self._config, self._device
        # FOURCC first: on V4L2 the available sizes and rates depend on the pixel format.
        if config.fourcc:
            capture.set(cv2.CAP_PROP_FOURCC, cv2.VideoWriter.fourcc(*config.fourcc))
        capture.set(cv2.CAP_PROP_FRAME_WIDTH, config.width)
        capture.set(cv2.CAP_PROP_FRAME_HEIGHT, config.height)
        capture.set(cv2.CAP_PROP_FPS, config.fps)
        modes = f"list its modes with `v4l2-ctl -d {device} --list-formats-ext`"
        actual_fourcc = fourcc_text(capture.get(cv2.CAP_PROP_FOURCC))
        if config.fourcc and actual_fourcc != config.fourcc:
            logger.warning(
                "camera %r: asked for %s, the driver chose %r; uncompressed formats (YUYV) can saturate "
                "USB with several cameras (%s)",
                config.name,
                config.fourcc,
                actual_fourcc,
                modes,
            )
        width = int(capture.get(cv2.CAP_PROP_FRAME_WIDTH))
        height = int(capture.get(cv2.CAP_PROP_FRAME_HEIGHT))
        if (width, height) != (config.width, config.height):
            raise CameraConfigError(
                config.name,
                f"asked for {config.width}x{config.height}, {device} delivers {width}x{height} "
                f"in {actual_fourcc or 'its default format'}",
                f"{modes} and set width/height to one it supports",
            )
        fps = capture.get(cv2.CAP_PROP_FPS)
        if fps <= 0:
            logger.warning("camera %r: the driver does not report its rate; so101-doctor measures it", config.name)
        elif abs(fps - config.fps) > _FPS_TOLERANCE:
            raise CameraConfigError(
                config.name,
                f"asked for {config.fps:g} fps, {device} delivers {fps:g} fps at {width}x{height}",
                f"{modes} and set fps to one it supports at that size",
            )
        self._apply_controls(capture)

    def _apply_controls(self, capture: VideoCaptureLike) -> None:
        """Set exposure, gain and focus where configured, then read each back; one ignored is a warning.

        After the format: on V4L2, setting the format can reset the controls. A camera that lacks a
        control (many have no focus motor) still streams, so a setting it ignores is not an error.
        """
        config = self._config
        for control in _CONTROLS:
            value = getattr(config, control.field)
            if value is None:
                continue
            manual = control.manual_mode is None or capture.set(control.mode_prop, control.manual_mode)
            accepted = capture.set(control.prop, float(value))
            reported = capture.get(control.prop)
            close = abs(reported - value) <= max(_CONTROL_TOLERANCE, _CONTROL_TOLERANCE_FRACTION * value)
            if manual and accepted and close:
                logger.info("camera %r: %s set to %g", config.name, control.field, reported)
                continue
            why = f"refused {control.mode_name}" if not manual else "refused it" if not accepted else "changed it"
            logger.warning(
                "camera %r: %s=%g was not applied: the driver %s and reports %g, so the camera keeps its own "
                "setting (list its controls with `v4l2-ctl -d %s --list-ctrls`)",
                config.name,
                control.field,
                value,
                why,
                reported,
                self._device,
            )

    def read(self) -> Frame:
        """Grab, stamp, decode, convert to RGB (see `FrameSource`)."""
        name = self._config.name
        capture = self._capture
        if capture is None:
            raise CameraDisconnectedError(name, "read while the device is closed")
        if not capture.grab():
            raise CameraReadError(name, "grab() failed: no frame within the driver's timeout")
        capture_time_s = self._clock()  # the frame has arrived; decoding comes next
        ok, bgr = capture.retrieve()
        if not ok or bgr is None:
            raise CameraReadError(name, "retrieve() failed: the frame could not be decoded")
        if bgr.shape[:2] != (self._config.height, self._config.width) or bgr.ndim != 3:
            raise CameraReadError(
                name,
                f"frame has shape {bgr.shape}, expected ({self._config.height}, {self._config.width}, 3)",
            )
        self._sequence += 1
        return Frame(name, cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), capture_time_s, self._sequence)

    def close(self) -> None:
        """Release the device (see `FrameSource`)."""
        if self._capture is not None:
            self._capture.release()
            self._capture = None


class OpenCVCamera(ThreadedCamera):
    """A USB camera: `OpenCVFrameSource` in a capture thread."""

    def __init__(
        self,
        config: OpenCVCameraConfig,
        open_capture: OpenCapture = open_cv2_capture,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        source = OpenCVFrameSource(config, open_capture, clock)
        super().__init__(config.name, config.fps, config.width, config.height, source, config.capture, clock)
        self.config = config
