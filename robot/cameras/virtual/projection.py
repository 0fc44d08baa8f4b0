"""Pinhole projection with near-plane clipping, for drawing 3-D lines and polygons with OpenCV.

Camera frame: x right, y down, z forward (OpenCV's convention). Pixel coordinates are returned as
int32 in 1/16 pixel (`SHIFT` fractional bits) for OpenCV's sub-pixel drawing.
"""

import math
from dataclasses import dataclass

import numpy as np

NEAR_M = 0.01  # anything closer to the lens than this is clipped away
SHIFT = 4  # fractional bits of the pixel coordinates handed to OpenCV
_SCALE = float(1 << SHIFT)
_LIMIT = 1 << 26  # keeps far-off-screen coordinates inside int32 after scaling


def look_at(position: np.ndarray, target: np.ndarray, down: np.ndarray) -> np.ndarray:
    """The (3, 3) world-to-camera rotation of a camera at `position` looking at `target`.

    `down` is the world direction that should point down in the image (need not be exact).
    """
    forward = (target - position) / np.linalg.norm(target - position)
    down_axis = down - forward * float(down @ forward)
    down_axis /= np.linalg.norm(down_axis)
    right = np.cross(down_axis, forward)
    return np.stack([right, down_axis, forward])


def focal_for_fov(width_px: int, horizontal_fov_deg: float) -> float:
    """Focal length in pixels for a horizontal field of view."""
    return (width_px / 2) / math.tan(math.radians(horizontal_fov_deg) / 2)


@dataclass(frozen=True, eq=False)
class PinholeView:
    """A camera pose and intrinsics."""

    rotation: np.ndarray  # (3, 3) world -> camera
    position: np.ndarray  # (3,) camera centre in the world, metres
    focal_px: float  # focal length, pixels
    width: int  # pixels
    height: int  # pixels

    def to_camera(self, points: np.ndarray) -> np.ndarray:
        """World points (..., 3) in camera coordinates (..., 3)."""
        return (points - self.position) @ self.rotation.T

    def to_pixels(self, camera_points: np.ndarray) -> np.ndarray:
        """Camera points (..., 3) with z >= NEAR_M to int32 pixels (..., 2) in 1/16 pixel."""
        z = np.maximum(camera_points[..., 2:3], NEAR_M)
        centre = np.array([self.width / 2, self.height / 2])
        pixels = (camera_points[..., :2] * (self.focal_px / z) + centre) * _SCALE
        return np.clip(pixels, -_LIMIT, _LIMIT).astype(np.int32)


def clip_polygon(camera_points: np.ndarray) -> np.ndarray:
    """The part of a convex polygon (N, 3) in front of the near plane (Sutherland-Hodgman)."""
    kept = []
    count = len(camera_points)
    for i in range(count):
        a, b = camera_points[i], camera_points[(i + 1) % count]
        a_in, b_in = a[2] >= NEAR_M, b[2] >= NEAR_M
        if a_in:
            kept.append(a)
        if a_in != b_in:
            t = (NEAR_M - a[2]) / (b[2] - a[2])
            kept.append(a + t * (b - a))
    return np.array(kept) if kept else np.empty((0, 3))


def clip_segment(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The part of segment a-b (camera coordinates) in front of the near plane, or None."""
    a_in, b_in = a[2] >= NEAR_M, b[2] >= NEAR_M
    if a_in and b_in:
        return a, b
    if not a_in and not b_in:
        return None
    t = (NEAR_M - a[2]) / (b[2] - a[2])
    cut = a + t * (b - a)
    return (a, cut) if a_in else (cut, b)
