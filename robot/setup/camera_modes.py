"""What a camera offers: pixel format, size and rate, from `v4l2-ctl` when installed, else by asking OpenCV.

    modes = camera_modes("/dev/video0")        # (CameraMode("MJPG", 640, 480, 30.0), ...)
    modes_summary(modes)                      # "MJPG 640x480@30/60, 1280x720@30; YUYV 640x480@30"
    choose_mode(modes, CameraMode("MJPG", 640, 480, 30.0))

`v4l2-ctl --list-formats-ext` lists every mode the driver has. Without it, OpenCV is asked for a
few common modes one by one, and those the driver keeps are the answer: enough to choose one.
"""

import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import cv2

from robot.cameras.opencv_camera import OpenCapture, fourcc_text, open_cv2_capture

_FPS_TOLERANCE = 0.5  # as the camera's own check: a driver saying 29.97 for 30 offers 30
_V4L2_CTL_TIMEOUT_S = 10.0  # it answers at once unless the driver hangs
_FORMAT = re.compile(r"(?:^\s*\[\d+\]:|Pixel Format\s*:)\s*'([^']{1,4})'")
_SIZE = re.compile(r"^\s*Size:\s*Discrete\s+(\d+)x(\d+)")
_INTERVAL = re.compile(r"^\s*Interval:\s*Discrete\s+[\d.]+s\s*\(([\d.]+)\s*fps\)")


@dataclass(frozen=True, order=True)
class CameraMode:
    """One mode a camera delivers."""

    fourcc: str  # "MJPG", "YUYV"
    width: int  # pixels
    height: int  # pixels
    fps: float  # frames per second

    def __str__(self) -> str:
        return f"{self.fourcc} {self.width}x{self.height}@{self.fps:g}"

    def matches(self, other: "CameraMode") -> bool:
        """The same format and size, and a rate within the drivers' rounding."""
        same = (self.fourcc, self.width, self.height) == (other.fourcc, other.width, other.height)
        return same and abs(self.fps - other.fps) <= _FPS_TOLERANCE


# Asked of OpenCV when v4l2-ctl is missing: the sizes and rates a rig uses, in both common formats.
PROBED_MODES = tuple(
    CameraMode(fourcc, width, height, fps)
    for fourcc in ("MJPG", "YUYV")
    for width, height in ((640, 480), (1280, 720), (1920, 1080), (320, 240))
    for fps in (30.0, 60.0)
)
RunCommand = Callable[..., subprocess.CompletedProcess[str]]


def parse_v4l2_formats(text: str) -> tuple[CameraMode, ...]:
    """The discrete modes in the output of `v4l2-ctl --list-formats-ext` (old and new layouts)."""
    modes: list[CameraMode] = []
    fourcc: str | None = None
    size: tuple[int, int] | None = None
    for line in text.splitlines():
        if (m := _FORMAT.search(line)) is not None:
            fourcc, size = m.group(1).strip(), None
        elif (m := _SIZE.match(line)) is not None:
            size = (int(m.group(1)), int(m.group(2)))
        elif line.lstrip().startswith("Size:"):
            size = None  # stepwise or continuous sizes: not listed
        elif (m := _INTERVAL.match(line)) is not None and fourcc and size:
            modes.append(CameraMode(fourcc, size[0], size[1], round(float(m.group(1)), 3)))
    return tuple(dict.fromkeys(modes))


def v4l2_modes(device: str, run: RunCommand = subprocess.run) -> tuple[CameraMode, ...] | None:
    """The device's modes from `v4l2-ctl`; None when it is not installed or fails."""
    if run is subprocess.run and shutil.which("v4l2-ctl") is None:
        return None
    try:
        done = run(
            ["v4l2-ctl", "-d", device, "--list-formats-ext"],
            capture_output=True,
            text=True,
            timeout=_V4L2_CTL_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_v4l2_formats(done.stdout) if done.returncode == 0 else None


def probe_modes(
    device: str, open_capture: OpenCapture = open_cv2_capture, candidates: Sequence[CameraMode] = PROBED_MODES
) -> tuple[CameraMode, ...]:
    """The `candidates` the device keeps when OpenCV asks for each; () when it will not open."""
    backend = cv2.CAP_V4L2 if sys.platform.startswith("linux") else cv2.CAP_ANY
    capture = open_capture(int(device) if device.isdigit() else device, backend)
    try:
        if not capture.isOpened():
            return ()
        kept = []
        for mode in candidates:
            capture.set(cv2.CAP_PROP_FOURCC, cv2.VideoWriter.fourcc(*mode.fourcc))
            capture.set(cv2.CAP_PROP_FRAME_WIDTH, mode.width)
            capture.set(cv2.CAP_PROP_FRAME_HEIGHT, mode.height)
            capture.set(cv2.CAP_PROP_FPS, mode.fps)
            fps = capture.get(cv2.CAP_PROP_FPS)
            got = CameraMode(
                fourcc_text(capture.get(cv2.CAP_PROP_FOURCC)),
                int(capture.get(cv2.CAP_PROP_FRAME_WIDTH)),
                int(capture.get(cv2.CAP_PROP_FRAME_HEIGHT)),
                fps if fps > 0 else mode.fps,  # a driver that does not say its rate: take it at its word
            )
            if got.matches(mode):
                kept.append(mode)
        return tuple(kept)
    finally:
        capture.release()


def camera_modes(
    device: str, run: RunCommand = subprocess.run, open_capture: OpenCapture = open_cv2_capture
) -> tuple[CameraMode, ...]:
    """The device's modes: from `v4l2-ctl` when installed, else from OpenCV."""
    listed = v4l2_modes(device, run)
    return listed if listed is not None else probe_modes(device, open_capture)


def modes_summary(modes: Sequence[CameraMode]) -> str:
    """The modes in one short line: "MJPG 640x480@30/60, 1280x720@30; YUYV 640x480@30"."""
    if not modes:
        return "modes not known"
    by_format: dict[str, dict[tuple[int, int], list[float]]] = {}
    for mode in modes:
        by_format.setdefault(mode.fourcc, {}).setdefault((mode.width, mode.height), []).append(mode.fps)
    parts = []
    for fourcc, sizes in by_format.items():
        listed = sorted(sizes.items(), key=lambda item: item[0][0] * item[0][1])
        rates = (f"{w}x{h}@{'/'.join(f'{fps:g}' for fps in sorted(set(rates)))}" for (w, h), rates in listed)
        parts.append(f"{fourcc} {', '.join(rates)}")
    return "; ".join(parts)


def choose_mode(modes: Sequence[CameraMode], wanted: CameraMode) -> CameraMode | None:
    """`wanted` if offered (or nothing is known), else the offered mode at its rate nearest in size, MJPG first.

    None: the camera offers nothing at that rate.
    """
    if not modes or any(mode.matches(wanted) for mode in modes):
        return wanted
    at_rate = [mode for mode in modes if abs(mode.fps - wanted.fps) <= _FPS_TOLERANCE]
    if not at_rate:
        return None
    area = wanted.width * wanted.height

    def distance(mode: CameraMode) -> tuple[bool, int]:
        return (mode.fourcc != wanted.fourcc, abs(mode.width * mode.height - area))

    best = min(at_rate, key=distance)
    return CameraMode(best.fourcc, best.width, best.height, wanted.fps)
