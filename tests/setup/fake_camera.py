"""A USB camera behind OpenCV's `VideoCapture` seam: it offers some modes and answers as a V4L2 driver does.

    camera = ModeCamera({CameraMode("MJPG", 640, 480, 30.0)}, colour=(0, 200, 0))
    probe_modes("/dev/video0", camera.open)

A driver asked for a mode it lacks keeps a mode it has (V4L2's S_FMT adjusts rather than refuses), so
what is read back tells the caller what it got. Frames are one colour, in OpenCV's BGR order.
"""

import cv2
import numpy as np

from robot.setup.camera_modes import CameraMode


def fourcc_code(text: str) -> float:
    return float(cv2.VideoWriter.fourcc(*text))


class ModeCamera:
    """The device; `open` is the `open_capture` factory handed to the code under test."""

    def __init__(self, modes: set[CameraMode], colour_rgb: tuple[int, int, int] = (0, 200, 0), plugged: bool = True):
        self.modes = modes
        self.colour_rgb = colour_rgb
        self.plugged = plugged
        self.opened: list[object] = []
        self.releases = 0

    def open(self, device: object, backend: int) -> "ModeCapture":
        self.opened.append(device)
        return ModeCapture(self)


class ModeCapture:
    def __init__(self, camera: ModeCamera) -> None:
        self.camera = camera
        first = min(camera.modes) if camera.modes else CameraMode("YUYV", 640, 480, 30.0)
        self.asked = {"fourcc": first.fourcc, "width": first.width, "height": first.height, "fps": first.fps}
        self.current = first

    def isOpened(self) -> bool:  # noqa: N802 (OpenCV's name)
        return self.camera.plugged

    def set(self, prop: int, value: float) -> bool:
        key = {
            cv2.CAP_PROP_FOURCC: "fourcc",
            cv2.CAP_PROP_FRAME_WIDTH: "width",
            cv2.CAP_PROP_FRAME_HEIGHT: "height",
            cv2.CAP_PROP_FPS: "fps",
        }.get(prop)
        if key is None:
            return False
        if key == "fourcc":
            code = int(value)
            self.asked[key] = "".join(chr((code >> (8 * i)) & 0xFF) for i in range(4))
        else:
            self.asked[key] = value
        wanted = CameraMode(
            self.asked["fourcc"], int(self.asked["width"]), int(self.asked["height"]), float(self.asked["fps"])
        )
        if wanted in self.camera.modes:
            self.current = wanted
        return True

    def get(self, prop: int) -> float:
        mode = self.current
        return {
            cv2.CAP_PROP_FOURCC: fourcc_code(mode.fourcc),
            cv2.CAP_PROP_FRAME_WIDTH: float(mode.width),
            cv2.CAP_PROP_FRAME_HEIGHT: float(mode.height),
            cv2.CAP_PROP_FPS: mode.fps,
        }.get(prop, -1.0)

    def grab(self) -> bool:
        return self.camera.plugged

    def retrieve(self) -> tuple[bool, np.ndarray | None]:
        r, g, b = self.camera.colour_rgb
        return True, np.full((self.current.height, self.current.width, 3), (b, g, r), np.uint8)

    def release(self) -> None:
        self.camera.releases += 1
