"""A square cloth on the table that a closed gripper can pick up, carry and fold over.

The cloth is an N x N grid of points joined by inextensible threads (structural and shear), solved
by position-based projection without velocities (Jacobi iterations as two small matrix products, so
a step costs about 0.2 ms): stable, and enough to look like cloth from a 30 fps camera. Points fall
onto the table when nothing holds them; threads only pull (a cloth buckles instead of resisting
compression); a gripper closed near a point holds it until it opens. No self-collision: a folded
layer lies at table height and the renderer draws flipped (upside-down) patches on top, which is
what a fold looks like from above.
"""

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from robot.joints import Side

REST_HEIGHT_M = 0.001  # the cloth's points rest this high above the table top
GRASP_RADIUS_M = 0.03  # a closing gripper takes the nearest point within this distance
GRASP_OPENING = 0.35  # below this opening (0..1) a gripper holds; the cloth stops jaws near 0.28
_FALL_SPEED_M_S = 1.0  # how fast an unsupported point drops (quasi-static, no inertia)
_ITERATIONS = 10  # thread projections per step
_RELAXATION = 1.5  # Jacobi over-relaxation: averaged corrections converge slowly without it


@dataclass(frozen=True)
class Gripper:
    """What the cloth needs to know about a gripper."""

    point: np.ndarray  # (3,) between the jaw tips, world metres
    opening: float  # 0 = closed .. 1 = open


def _threads(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Point index pairs of every thread: along rows, along columns and both diagonals."""
    index = np.arange(n * n).reshape(n, n)
    pairs = [
        (index[:, :-1], index[:, 1:]),
        (index[:-1, :], index[1:, :]),
        (index[:-1, :-1], index[1:, 1:]),
        (index[:-1, 1:], index[1:, :-1]),
    ]
    return np.concatenate([a.ravel() for a, _ in pairs]), np.concatenate([b.ravel() for _, b in pairs])


class Cloth:
    """The cloth's state; not thread-safe (the scene steps it under its lock)."""

    def __init__(self, center_xy_m: tuple[float, float], size_m: float, grid: int) -> None:
        self.grid = grid
        axis = np.linspace(-size_m / 2, size_m / 2, grid)
        xs, ys = np.meshgrid(center_xy_m[0] + axis, center_xy_m[1] + axis)
        self._points = np.stack([xs.ravel(), ys.ravel(), np.full(grid * grid, REST_HEIGHT_M)], axis=1)
        self._a, self._b = _threads(grid)
        self._rest = np.linalg.norm(self._points[self._b] - self._points[self._a], axis=1)
        # Incidence matrices turn "add each thread's correction to its two points" into two products.
        count = grid * grid
        self._to_a = np.zeros((count, len(self._a)))
        self._to_a[self._a, np.arange(len(self._a))] = 1.0
        self._to_b = np.zeros((count, len(self._b)))
        self._to_b[self._b, np.arange(len(self._b))] = 1.0
        self._scale = (_RELAXATION / (self._to_a.sum(axis=1) + self._to_b.sum(axis=1)))[:, None]
        self._held: dict[Side, int] = {}

    @property
    def held(self) -> Mapping[Side, int]:
        """Which point each holding gripper has, by side."""
        return dict(self._held)

    def points(self) -> np.ndarray:
        """A read-only copy of the points, shape (grid, grid, 3), metres."""
        points = self._points.reshape(self.grid, self.grid, 3).copy()
        points.flags.writeable = False
        return points

    def step(self, grippers: Mapping[Side, Gripper], dt_s: float) -> None:
        """Advance by `dt_s` seconds with the grippers where they are now."""
        points = self._points
        for side, gripper in grippers.items():
            if gripper.opening >= GRASP_OPENING:
                self._held.pop(side, None)
            elif side not in self._held:
                distance = np.linalg.norm(points - gripper.point, axis=1)
                nearest = int(np.argmin(distance))
                if distance[nearest] <= GRASP_RADIUS_M:
                    self._held[side] = nearest
        inverse_mass = np.ones(len(points))
        points[:, 2] -= _FALL_SPEED_M_S * max(0.0, dt_s)
        for side, index in self._held.items():
            inverse_mass[index] = 0.0
            points[index] = grippers[side].point
        np.maximum(points[:, 2], REST_HEIGHT_M, out=points[:, 2])
        a, b, rest = self._a, self._b, self._rest
        weight_a, weight_b = inverse_mass[a][:, None], inverse_mass[b][:, None]
        total = np.maximum(weight_a + weight_b, 1e-9)
        for _ in range(_ITERATIONS):
            delta = points[b] - points[a]
            length = np.sqrt((delta * delta).sum(axis=1))
            stretch = (np.maximum(length - rest, 0.0) / np.maximum(length, 1e-9))[:, None]
            correction = delta * stretch / total
            points += (self._to_a @ (correction * weight_a) - self._to_b @ (correction * weight_b)) * self._scale
            np.maximum(points[:, 2], REST_HEIGHT_M, out=points[:, 2])
