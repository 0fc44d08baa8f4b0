"""A square cloth on the table that a closed gripper can pick up, carry and fold over.

The cloth is an N x N grid of points joined by inextensible threads (structural and shear), solved
by position-based projection without velocities (Jacobi iterations as two small matrix products, so
a step costs about half a millisecond): stable, and enough to look like cloth from a 30 fps camera.
Points fall onto the table when nothing holds them; threads only pull (a cloth buckles instead of
resisting compression); a gripper whose jaws close near a point holds it until it opens (jaws
already closed take nothing: they push through).

While anything holds the cloth, the part lying on the table keeps its shape, as friction and the
weave keep a real cloth's: it stays where it lay (a lifted edge peels it off the table instead of
sliding it), or, when a grip drags it along the table, it slides with the grip as a whole instead
of being drawn into a rope behind it. Each resting point is moved back, once a step and before the
threads are solved, to where it lay shifted as the grips on the table moved, so the inextensible
threads still win where they must. A part that was lifted drapes freely until the next grasp or
release. No self-collision: a folded layer lies at table height and the renderer draws flipped
(upside-down) patches on top, which is what a fold looks like from above.
"""

import math
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
SHAPE_STIFFNESS = 1.0  # share of the way a resting point is moved back to its place in the shape, per step
_RESTING_M = REST_HEIGHT_M + 0.002  # a point at most this high lies on the table
_DRAGGING_M = 0.03  # a held point at most this high drags the cloth along the table (higher: it lifts)


@dataclass(frozen=True)
class ClothPose:
    """Where the square cloth lies flat when the table is tidied (world frame, see scene.py)."""

    x_m: float  # the cloth's centre
    y_m: float
    yaw_deg: float  # its rotation about z, counterclockwise seen from above (0: edges along x and y)
    size_m: float  # the side of the square

    def to_world(self, u: float | np.ndarray, v: float | np.ndarray) -> np.ndarray:
        """World (x, y) of the point at (u, v) in the cloth's own frame, in sides (-0.5..0.5 spans the cloth).

        u runs along the cloth's columns (world +x at yaw 0), v along its rows (world +y at yaw 0),
        as the grid is laid out: point [i, j] starts at (u, v) = (j / (grid - 1) - 0.5, i / (grid - 1) - 0.5).
        """
        angle = math.radians(self.yaw_deg)
        c, s = math.cos(angle), math.sin(angle)
        du, dv = np.asarray(u, dtype=float) * self.size_m, np.asarray(v, dtype=float) * self.size_m
        return np.stack([self.x_m + c * du - s * dv, self.y_m + s * du + c * dv], axis=-1)


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

    def __init__(self, pose: ClothPose, grid: int) -> None:
        self.grid = grid
        self.pose = pose
        axis = np.linspace(-0.5, 0.5, grid)
        us, vs = np.meshgrid(axis, axis)
        xy = pose.to_world(us.ravel(), vs.ravel())
        self._points = np.concatenate([xy, np.full((grid * grid, 1), REST_HEIGHT_M)], axis=1)
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
        self._was_open: dict[Side, bool] = {}  # jaws open at the last step (a grasp needs them to close)
        self._shape_xy = self._points[:, :2].copy()  # where the resting points lay when the holds last changed
        self._shaped = np.ones(len(self._points), dtype=bool)  # which points keep to that shape

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
        before = dict(self._held)
        for side, gripper in grippers.items():
            is_open = gripper.opening >= GRASP_OPENING
            if is_open:
                self._held.pop(side, None)
            elif side not in self._held and self._was_open.get(side, False):
                distance = np.linalg.norm(points - gripper.point, axis=1)
                nearest = int(np.argmin(distance))
                if distance[nearest] <= GRASP_RADIUS_M:
                    self._held[side] = nearest
            self._was_open[side] = is_open
        if self._held != before:  # a grasp or a release: the cloth's shape on the table is its shape now
            self._shape_xy = points[:, :2].copy()
            self._shaped = points[:, 2] <= _RESTING_M
        # The grips held since the last step, where their points were (a new grasp's snap is no drag).
        grips_before = {side: points[i].copy() for side, i in self._held.items() if before.get(side) == i}
        inverse_mass = np.ones(len(points))
        points[:, 2] -= _FALL_SPEED_M_S * max(0.0, dt_s)
        for side, index in self._held.items():
            inverse_mass[index] = 0.0
            points[index] = grippers[side].point
        self._shape_xy += self._drag(grips_before)
        np.maximum(points[:, 2], REST_HEIGHT_M, out=points[:, 2])
        a, b, rest = self._a, self._b, self._rest
        weight_a, weight_b = inverse_mass[a][:, None], inverse_mass[b][:, None]
        total = np.maximum(weight_a + weight_b, 1e-9)
        if self._held and self._shaped.any():
            self._keep_shape(points, inverse_mass)  # first: the threads below still win where they must
        for _ in range(_ITERATIONS):
            delta = points[b] - points[a]
            length = np.sqrt((delta * delta).sum(axis=1))
            stretch = (np.maximum(length - rest, 0.0) / np.maximum(length, 1e-9))[:, None]
            correction = delta * stretch / total
            points += (self._to_a @ (correction * weight_a) - self._to_b @ (correction * weight_b)) * self._scale
            np.maximum(points[:, 2], REST_HEIGHT_M, out=points[:, 2])
        self._shaped &= points[:, 2] <= _RESTING_M  # a lifted part drapes freely until the holds change

    def _drag(self, grips_before: Mapping[Side, np.ndarray]) -> np.ndarray:
        """How far the grips on the table slid the cloth this step: the least any of them moved, (2,) metres.

        A grip counts while its point stays on the table (a lift peels the cloth instead), and one that
        stays put (a clamp) pins the cloth. Step by step, so a grip that was lifted, carried and laid
        down again drags only from then on.
        """
        moves = []
        for side, before in grips_before.items():
            now = self._points[self._held[side]]
            if before[2] <= _DRAGGING_M and now[2] <= _DRAGGING_M:
                moves.append(now[:2] - before[:2])
        if not moves:
            return np.zeros(2)
        return moves[int(np.argmin([np.linalg.norm(move) for move in moves]))]

    def _keep_shape(self, points: np.ndarray, inverse_mass: np.ndarray) -> None:
        """Move the resting points back to where they lay (slid along with any drag)."""
        pulled = self._shaped & (inverse_mass > 0)
        points[pulled, :2] += SHAPE_STIFFNESS * (self._shape_xy[pulled] - points[pulled, :2])
