"""Camera configs: one frozen dataclass per kind, told apart by `kind`, validated on construction.

In a rig YAML file, e.g.:

    cameras:
      - {kind: opencv, name: overhead, device: /dev/v4l/by-id/usb-046d_C270-video-index0}
      - {kind: virtual, name: left_wrist, view: left_wrist, phase_s: 0.011, jitter_s: 0.002}

`camera_config_from_dict` turns one such entry into a config; `make_camera` (factory.py) turns a
config into a camera.
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any

from robot.cameras.errors import CameraConfigError
from robot.config_checks import non_finite_field
from robot.joints import CameraRole


class CameraKind(StrEnum):
    """The closed set of camera implementations."""

    OPENCV = "opencv"
    VIRTUAL = "virtual"


def _check(camera: str, name: str, value: object, ok: bool, allowed: str) -> None:
    if not ok:
        raise CameraConfigError(camera, f"{name}={value!r} is not allowed; expected {allowed}")


def _check_finite(camera: str, config: object, prefix: str = "") -> None:
    """NaN or infinity in a number field (which range checks let through) names the camera and field."""
    bad = non_finite_field(config)
    if bad is not None:
        name, value = bad
        _check(camera, f"{prefix}{name}", value, False, "a finite number (not NaN or infinity)")


def _check_size_and_rate(camera: str, width: int, height: int, fps: float) -> None:
    _check(camera, "width", width, isinstance(width, int) and 16 <= width <= 7680, "an int in 16..7680 pixels")
    _check(
        camera,
        "height",
        height,
        isinstance(height, int) and 16 <= height <= 4320,
        "an int in 16..4320 pixels",
    )
    _check(camera, "fps", fps, math.isfinite(fps) and 0 < fps <= 240, "frames per second in (0, 240]")


EXPOSURE_UNITS_PER_S = 10_000  # V4L2's exposure_time_absolute counts 100 µs steps
MAX_CONTROL_VALUE = 65_535  # UVC gain and focus are 16-bit controls


def _check_controls(config: "OpenCVCameraConfig") -> None:
    """Exposure, gain and focus, when set: numbers in range (None: the camera's own setting)."""
    for name in ("exposure", "gain", "focus"):
        value = getattr(config, name)
        number = isinstance(value, int | float) and not isinstance(value, bool)
        _check(config.name, name, value, value is None or number, "a number, or null (the camera's own setting)")
    frame_units = EXPOSURE_UNITS_PER_S / config.fps
    exposure = config.exposure
    # Longer than a frame, the camera would slow down to fit the exposure: the rate check would fail later.
    _check(
        config.name,
        "exposure",
        exposure,
        exposure is None or 0 < exposure <= frame_units,
        f"100 µs units in (0, {frame_units:g}] (one frame at {config.fps:g} fps), or null for auto exposure",
    )
    for name in ("gain", "focus"):
        value = getattr(config, name)
        _check(
            config.name,
            name,
            value,
            value is None or 0 <= value <= MAX_CONTROL_VALUE,
            f"the driver's units in [0, {MAX_CONTROL_VALUE}], or null (the camera's own setting)",
        )


MIN_RING_FRAMES = 4  # the frames either side of a tick, and one being replaced


@dataclass(frozen=True)
class CaptureConfig:
    """How any camera's capture thread buffers frames and handles faults."""

    # Recent frames kept for the sync reader, frames; None: `history_s` of frames at the camera's
    # rate, at least MIN_RING_FRAMES. Each is a whole image (0.9 MB at 640x480), so the default keeps
    # what matching needs (a period either side of the tick, the read's wait, a late tick) and no more.
    ring_size: int | None = None
    history_s: float = 0.15  # how far back the ring reaches when ring_size is None, seconds
    max_frame_age_s: float = 0.25  # newest frame older than this: CameraStaleError, seconds
    connect_timeout_s: float = 5.0  # longest wait for the first frame after opening, seconds
    read_failures_before_reconnect: int = 3  # consecutive failed reads that trigger a reconnect
    reconnect_attempts: int = 3  # reopen attempts before the camera is declared disconnected
    reconnect_delay_s: float = 0.5  # pause before each reopen (USB re-enumeration takes time), seconds
    # SCHED_FIFO priority of the capture thread, 0 = ordinary. The rig sets it just below its loop's,
    # so a capture thread holding the GIL is never preempted by an encoder while the loop waits for it.
    realtime_priority: int = 0

    def ring_frames(self, fps: float) -> int:
        """Frames the ring holds for a camera running at `fps`."""
        if self.ring_size is not None:
            return self.ring_size
        return max(MIN_RING_FRAMES, math.ceil(self.history_s * fps))

    def check(self, camera: str) -> None:
        """Validate for the camera named `camera`; raises CameraConfigError naming the field."""
        # Checked here rather than in __post_init__: the error then names the camera it belongs to.
        _check_finite(camera, self, "capture.")
        size = self.ring_size
        _check(camera, "capture.ring_size", size, size is None or size >= 2, "an int >= 2 frames, or null (auto)")
        _check(camera, "capture.history_s", self.history_s, 0 < self.history_s <= 10, "seconds in (0, 10]")
        _check(camera, "capture.max_frame_age_s", self.max_frame_age_s, self.max_frame_age_s > 0, "seconds > 0")
        priority = self.realtime_priority
        _check(camera, "capture.realtime_priority", priority, 0 <= priority <= 99, "0 (ordinary) to 99")
        _check(
            camera,
            "capture.connect_timeout_s",
            self.connect_timeout_s,
            self.connect_timeout_s > 0,
            "seconds > 0",
        )
        _check(
            camera,
            "capture.read_failures_before_reconnect",
            self.read_failures_before_reconnect,
            self.read_failures_before_reconnect >= 1,
            "an int >= 1",
        )
        _check(
            camera,
            "capture.reconnect_attempts",
            self.reconnect_attempts,
            self.reconnect_attempts >= 0,
            "an int >= 0",
        )
        _check(
            camera,
            "capture.reconnect_delay_s",
            self.reconnect_delay_s,
            self.reconnect_delay_s >= 0,
            "seconds >= 0",
        )


@dataclass(frozen=True)
class OpenCVCameraConfig:
    """A USB (UVC) camera read through OpenCV."""

    name: str  # key in observations and datasets, e.g. "overhead", "left_wrist"
    device: str  # /dev/v4l/by-id/... (stable), /dev/videoN, or an index such as "0"
    kind: CameraKind = CameraKind.OPENCV
    width: int = 640  # requested and verified, pixels
    height: int = 480  # requested and verified, pixels
    fps: float = 30.0  # requested and verified (when the driver reports it), frames per second
    fourcc: str = "MJPG"  # preferred pixel format: MJPG fits 3 cameras on one USB 2 bus, YUYV does not
    # Manual exposure time in V4L2's units of 100 µs (156 = 15.6 ms), at most one frame period, so
    # the rate holds; turns auto exposure off. None leaves the camera's own (usually auto) setting.
    exposure: float | None = None
    # Sensor gain in the driver's units (UVC cameras: often 0-255); None leaves the camera's setting.
    gain: float | None = None
    # Manual focus in the driver's units (UVC: often 0-255, larger is nearer); turns autofocus off.
    # None leaves the camera's own (usually auto) setting. Fixed focus keeps a wrist camera sharp.
    focus: float | None = None
    capture: CaptureConfig = field(default_factory=CaptureConfig)

    def __post_init__(self) -> None:
        _check_finite(self.name, self)
        _check(self.name, "name", self.name, bool(self.name), "a non-empty name")
        _check(self.name, "kind", self.kind, self.kind == CameraKind.OPENCV, "'opencv'")
        _check(self.name, "device", self.device, bool(str(self.device)), "a device path or index")
        _check_size_and_rate(self.name, self.width, self.height, self.fps)
        _check_controls(self)
        _check(
            self.name,
            "fourcc",
            self.fourcc,
            len(self.fourcc) in (0, 4),
            "4 characters, or '' for the driver's",
        )
        self.capture.check(self.name)


@dataclass(frozen=True)
class VirtualCameraConfig:
    """A synthetic camera rendering the virtual rig, with the faults real cameras have."""

    name: str  # key in observations and datasets, e.g. "overhead", "left_wrist"
    view: CameraRole = CameraRole.OVERHEAD  # what it looks at
    kind: CameraKind = CameraKind.VIRTUAL
    width: int = 640  # pixels (160x120 keeps tests fast)
    height: int = 480  # pixels
    fps: float = 30.0  # frames per second
    phase_s: float = 0.0  # offset of this camera's frame times from the rig's shared epoch, seconds
    jitter_s: float = 0.0  # each capture time moves by a seeded uniform amount in ±jitter_s, seconds
    drop_rate: float = 0.0  # probability that a frame is lost (a sequence gap), seeded, 0..1
    seed: int = 0  # seeds jitter and drops, so a scenario repeats exactly
    freeze_after_s: float | None = None  # after this long connected, no new frames (a hung camera), s
    disconnect_after_s: float | None = None  # after this long connected, the camera is gone, s
    capture: CaptureConfig = field(default_factory=CaptureConfig)

    def __post_init__(self) -> None:
        _check_finite(self.name, self)
        _check(self.name, "name", self.name, bool(self.name), "a non-empty name")
        _check(self.name, "kind", self.kind, self.kind == CameraKind.VIRTUAL, "'virtual'")
        _check(
            self.name,
            "view",
            self.view,
            self.view in set(CameraRole),
            f"one of {[v.value for v in CameraRole]}",
        )
        _check_size_and_rate(self.name, self.width, self.height, self.fps)
        period_s = 1.0 / self.fps
        _check(
            self.name,
            "phase_s",
            self.phase_s,
            0 <= self.phase_s < period_s,
            f"seconds in [0, {period_s:.4f})",
        )
        # Beyond half a period, jittered frames could swap order; real cameras never do that.
        half_s = period_s / 2
        _check(self.name, "jitter_s", self.jitter_s, 0 <= self.jitter_s < half_s, f"seconds in [0, {half_s:.4f})")
        _check(self.name, "drop_rate", self.drop_rate, 0 <= self.drop_rate < 1, "a probability in [0, 1)")
        for name in ("freeze_after_s", "disconnect_after_s"):
            value = getattr(self, name)
            _check(self.name, name, value, value is None or value >= 0, "None or seconds >= 0")
        self.capture.check(self.name)


CameraConfig = OpenCVCameraConfig | VirtualCameraConfig


def camera_config_from_dict(entry: Mapping[str, Any]) -> CameraConfig:
    """One camera entry of a rig file (already parsed YAML) as a config.

    Raises:
        CameraConfigError: unknown kind or field, or a value that is not allowed.
    """
    name = str(entry.get("name", "?"))
    data = dict(entry)
    capture = data.pop("capture", None)
    match data.get("kind"):
        case CameraKind.OPENCV:
            config_type: type[OpenCVCameraConfig] | type[VirtualCameraConfig] = OpenCVCameraConfig
        case CameraKind.VIRTUAL:
            config_type = VirtualCameraConfig
        case other:
            raise CameraConfigError(
                name, f"kind={other!r} is not allowed; expected one of {[k.value for k in CameraKind]}"
            )
    known = {f.name for f in fields(config_type)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise CameraConfigError(name, f"unknown field(s) {unknown} for kind {data['kind']!r}; expected {sorted(known)}")
    capture_known = {f.name for f in fields(CaptureConfig)}
    if capture is not None and not set(capture) <= capture_known:
        bad = sorted(set(capture) - capture_known)
        raise CameraConfigError(name, f"unknown capture field(s) {bad}; expected {sorted(capture_known)}")
    if "view" in data:
        data["view"] = CameraRole(data["view"]) if data["view"] in set(CameraRole) else data["view"]
    data["kind"] = CameraKind(data["kind"])
    if capture is not None:
        data["capture"] = CaptureConfig(**capture)
    return config_type(**data)
