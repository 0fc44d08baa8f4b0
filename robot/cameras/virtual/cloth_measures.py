"""Geometry of a logged cloth for the ground truth: its frame at the reset, mirror partners, covered area.

A fold in half reflects the grid across one of its four middle lines: the two between opposite
edges and the two diagonals. Each point then lies on its mirror partner, the point the reflection
maps it to, whichever arm folded which edge or corner over.
"""

import math
from dataclasses import dataclass

import numpy as np

from robot.cameras.virtual.cloth_history import NOT_HELD, ClothHistory

LINES_DEG = (0.0, 90.0, 45.0, 135.0)  # the middle lines' directions in the cloth frame, degrees from +u
_MAX_RASTER_CELLS = 128  # cells along the raster's longer side at most, so odd data cannot exhaust memory


@dataclass(frozen=True, eq=False)
class ClothFrames:
    """A history seen in the cloth's frame at the reset: u, v in sides (-0.5..0.5 spans the tidy cloth)."""

    size_m: float  # the cloth's side
    n: int  # points per side of the grid
    times_s: np.ndarray  # (T,) seconds since the reset
    uv0: np.ndarray  # (K, 2) where each point lay at the reset, sides; K = n * n, row-major like the grid
    uv: np.ndarray  # (T, K, 2) where each point is, sides
    z_m: np.ndarray  # (T, K) its height above the table, metres
    held: np.ndarray  # (T, sides) the point index each gripper holds, NOT_HELD if none

    @classmethod
    def of(cls, history: ClothHistory) -> "ClothFrames | None":
        """The history in the cloth frame, or None if it has under two steps or is not a square grid."""
        points = np.nan_to_num(np.asarray(history.points, dtype=float))
        square = points.ndim == 4 and points.shape[1] == points.shape[2] >= 2 and points.shape[3] == 3
        if len(points) < 2 or not square:
            return None
        pose, n = history.pose, points.shape[1]
        size_m = max(abs(pose.size_m), 1e-6)
        angle = math.radians(pose.yaw_deg)
        c, s = math.cos(angle), math.sin(angle)
        flat = points.reshape(len(points), n * n, 3)
        dx, dy = flat[..., 0] - pose.x_m, flat[..., 1] - pose.y_m
        uv = np.stack([c * dx + s * dy, -s * dx + c * dy], axis=-1) / size_m
        axis = np.linspace(-0.5, 0.5, n)
        us, vs = np.meshgrid(axis, axis)
        uv0 = np.stack([us.ravel(), vs.ravel()], axis=-1)
        held = np.asarray(history.held, dtype=int)
        if held.ndim != 2 or len(held) != len(points):  # a malformed log: count nothing as held
            held = np.full((len(points), 2), NOT_HELD)
        times_s = np.asarray(history.times_s, dtype=float).ravel()
        if len(times_s) != len(points):
            times_s = np.arange(len(points), dtype=float)
        return cls(size_m, n, np.nan_to_num(times_s), uv0, uv, flat[..., 2], held)

    @property
    def holding(self) -> np.ndarray:
        """(T, sides) whether each gripper holds a point of this grid (odd indices hold nothing)."""
        return (self.held >= 0) & (self.held < len(self.uv0))

    def metres(self, index: np.ndarray) -> np.ndarray:
        """(T, len(index), 3) the points' positions in metres (cloth frame, table at z = 0)."""
        return np.concatenate([self.uv[:, index] * self.size_m, self.z_m[:, index, None]], axis=-1)


def line_normal(line_deg: float) -> np.ndarray:
    """Unit normal of a middle line in the cloth frame (u, v)."""
    angle = math.radians(line_deg + 90.0)
    return np.array([math.cos(angle), math.sin(angle)])


def mirror_partners(n: int, line_deg: float) -> np.ndarray:
    """(n * n,) each grid point's mirror partner across a middle line (a point on the line is its own)."""
    last = n - 1
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    reflected = {0.0: (last - i, j), 90.0: (i, last - j), 45.0: (j, i), 135.0: (last - j, last - i)}[line_deg]
    return (reflected[0] * n + reflected[1]).ravel()


def mirror_pairs(frames: ClothFrames, line_deg: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The points on the negative side of a middle line, their partners, and their distance from it (sides)."""
    partner = mirror_partners(frames.n, line_deg)
    d0 = frames.uv0 @ line_normal(line_deg)
    side = d0 < -1e-9  # points on the line are their own partners
    return np.flatnonzero(side), partner[side], -d0[side]


def pair_gaps_m(frames: ClothFrames, line_deg: float) -> tuple[np.ndarray, np.ndarray]:
    """(T, P) distance from each point to its mirror partner, metres, and (P,) the points' distance from the line."""
    index, partner, distance = mirror_pairs(frames, line_deg)
    return np.linalg.norm(frames.metres(index) - frames.metres(partner), axis=-1), distance


def covered_share(uv: np.ndarray, n: int, cells_per_side: int) -> float:
    """Table area under the cloth seen from above, as a share of the flat cloth's.

    The union of the grid's triangles (both layers of a fold count once), counted on square cells
    of 1 / `cells_per_side` sides. `uv`: (n * n, 2) in sides.
    """
    square = uv.reshape(n, n, 2)
    corners = (square[:-1, :-1], square[:-1, 1:], square[1:, 1:], square[1:, :-1])
    a = np.concatenate([corners[0], corners[0]]).reshape(-1, 2)
    b = np.concatenate([corners[1], corners[2]]).reshape(-1, 2)
    c = np.concatenate([corners[2], corners[3]]).reshape(-1, 2)
    doubled_area = (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])
    keep = np.abs(doubled_area) > 1e-12  # a triangle pressed flat onto a line covers nothing
    a, b, c = a[keep], b[keep], c[keep]
    if len(a) == 0:
        return 0.0
    low, high = uv.min(axis=0), uv.max(axis=0)
    cell = max(1.0 / cells_per_side, float((high - low).max()) / _MAX_RASTER_CELLS)
    xs = np.arange(low[0] + cell / 2, high[0], cell)
    ys = np.arange(low[1] + cell / 2, high[1], cell)
    px, py = (axis.ravel()[:, None] for axis in np.meshgrid(xs, ys))

    def side_of(p: np.ndarray, q: np.ndarray) -> np.ndarray:
        return (q[:, 0] - p[:, 0]) * (py - p[:, 1]) - (q[:, 1] - p[:, 1]) * (px - p[:, 0])

    e0, e1, e2 = side_of(a, b), side_of(b, c), side_of(c, a)
    # Either winding: a layer folded over lies upside down, so its triangles turn the other way.
    inside = ((e0 >= 0) & (e1 >= 0) & (e2 >= 0)) | ((e0 <= 0) & (e1 <= 0) & (e2 <= 0))
    return float(inside.any(axis=1).sum() * cell * cell)
