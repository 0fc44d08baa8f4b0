"""One captured image with its monotonic capture time and per-camera sequence number."""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class Frame:
    """An image as the camera delivered it; frames are shared between threads, so read-only.

    Compared by identity (`eq=False`): two frames are the same frame only if they are one object,
    which is what duplicate detection wants and what an element-wise array comparison is not.
    """

    camera: str  # the camera's name, e.g. "overhead"
    image: np.ndarray  # uint8, height x width x 3, RGB; made read-only on construction
    capture_time_s: float  # time.monotonic() when the frame was captured, seconds
    sequence: int  # per camera, strictly increasing; a gap of n means n frames the camera lost

    def __post_init__(self) -> None:
        if self.image.dtype != np.uint8 or self.image.ndim != 3 or self.image.shape[2] != 3:
            raise ValueError(
                f"camera {self.camera!r}: frame image must be uint8 HxWx3 RGB, "
                f"got {self.image.dtype} with shape {self.image.shape}"
            )
        # Consumers (sync reader, recorder, display) share this array; nobody may draw on it.
        self.image.flags.writeable = False

    @property
    def height(self) -> int:
        """Image height in pixels."""
        return int(self.image.shape[0])

    @property
    def width(self) -> int:
        """Image width in pixels."""
        return int(self.image.shape[1])


def achieved_fps(frames: Sequence[Frame]) -> float:
    """Frames per second delivered over `frames` (oldest first), from their capture times.

    Returns 0.0 with fewer than two frames. Used by the doctor and the status line.
    """
    if len(frames) < 2:
        return 0.0
    span_s = frames[-1].capture_time_s - frames[0].capture_time_s
    return (len(frames) - 1) / span_s if span_s > 0 else 0.0
