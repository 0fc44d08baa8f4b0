"""The world the virtual cameras see: two SO-101 followers, a table and a cloth, shared by all views.

World frame (metres): x to the right as seen from behind the arms, y away from the arm bases
across the table, z up; the table top is z = 0. The arms stand side by side on the near edge,
facing +y, like a real bimanual setup; the cloth lies between and in front of them.

    joint_source() --> forward kinematics --> cloth step --> SceneState (immutable)
    (arms at most every _MIN_STEP_S, so the three cameras share states; the cloth, which moves
    slowly, at most every _CLOTH_STEP_S)
"""

import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from robot.cameras.virtual.cloth import Cloth, ClothPose, Gripper
from robot.cameras.virtual.cloth_history import ClothHistory, ClothLog
from robot.cameras.virtual.kinematics import PAN_AXIS_XY_M, ArmPose, arm_pose, rot_z, transform
from robot.joint_values import JointValues
from robot.joints import Side

# A callable returning the followers' joint positions: degrees for body joints (0 = middle of range),
# 0..100 for grippers. It is called from the capture threads, so it must be thread-safe and quick
# (return the last positions read; never do bus I/O in it).
JointSource = Callable[[], JointValues]

_MIN_STEP_S = 0.002  # cameras asking within this of each other share one state, seconds
_CLOTH_STEP_S = 0.02  # the cloth steps at most 50 times a second, seconds
_MAX_STEP_S = 0.1  # after a pause the cloth does not jump, seconds


@dataclass(frozen=True)
class SceneLayout:
    """Where things stand on the virtual table, metres in the world frame."""

    base_separation_m: float = 0.5  # between the two shoulder_pan axes
    table_x_m: tuple[float, float] = (-0.6, 0.6)  # table extent left..right
    table_y_m: tuple[float, float] = (-0.15, 0.65)  # table extent near (arm side)..far
    cloth_center_m: tuple[float, float] = (0.0, 0.22)  # x, y, where the tidy cloth lies by default
    cloth_size_m: float = 0.22  # side of the square cloth by default
    cloth_grid: int = 9  # points per side of the cloth's grid

    def cloth_pose(self) -> ClothPose:
        """The cloth as it lies before any episode chose another pose: centred, square to the table."""
        return ClothPose(self.cloth_center_m[0], self.cloth_center_m[1], 0.0, self.cloth_size_m)

    def base(self, side: Side) -> np.ndarray:
        """(4, 4) pose of an arm's base link: its pan axis on its spot, its forward (-y) along +y."""
        x = (-0.5 if side is Side.LEFT else 0.5) * self.base_separation_m
        rotation = rot_z(math.pi)
        offset = rotation[:2, :2] @ np.array(PAN_AXIS_XY_M)
        return transform((x - offset[0], -offset[1], 0.0), rotation)


@dataclass(frozen=True, eq=False)
class SceneState:
    """One moment of the scene; immutable, shared by every camera thread."""

    time_s: float  # monotonic time the joints were read, seconds
    arms: Mapping[Side, ArmPose]
    cloth: np.ndarray  # (grid, grid, 3) point positions, metres, read-only


class VirtualScene:
    """Evaluates the joint-state source into arm poses and steps the cloth. Thread-safe."""

    def __init__(
        self,
        joint_source: JointSource,
        layout: SceneLayout | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.layout = layout or SceneLayout()
        self._joint_source = joint_source
        self._clock = clock
        self._bases = {side: self.layout.base(side) for side in Side}
        self._lock = threading.Lock()
        self._state: SceneState | None = None
        self.reset_cloth(self.layout.cloth_pose())

    def reset_cloth(self, pose: ClothPose) -> None:
        """Tidy the table: the cloth lies flat at `pose`, nothing holds it, its history starts again."""
        with self._lock:
            self._cloth = Cloth(pose, self.layout.cloth_grid)
            self._cloth_time_s: float | None = None
            self._cloth_points = self._cloth.points()
            self._log = ClothLog(pose, self.layout.cloth_grid)
            self._reset_s = self._clock()
            self._state = None

    def cloth_history(self) -> ClothHistory:
        """What the cloth did since the last reset (a copy)."""
        with self._lock:
            return self._log.history()

    def observe(self) -> SceneState:
        """The scene now (or at most `_MIN_STEP_S` ago)."""
        with self._lock:
            now_s = self._clock()
            if self._state is not None and now_s - self._state.time_s < _MIN_STEP_S:
                return self._state
            positions = self._joint_source()
            arms = {side: arm_pose(positions.side(side), self._bases[side]) for side in Side}
            if self._cloth_time_s is None or now_s - self._cloth_time_s >= _CLOTH_STEP_S:
                dt_s = 0.0 if self._cloth_time_s is None else min(_MAX_STEP_S, now_s - self._cloth_time_s)
                grippers = {side: Gripper(arm.grasp_point, arm.opening) for side, arm in arms.items()}
                self._cloth.step(grippers, dt_s)
                self._cloth_points = self._cloth.points()
                self._cloth_time_s = now_s
                self._log.append(now_s - self._reset_s, self._cloth_points, dict(self._cloth.held))
            self._state = SceneState(now_s, arms, self._cloth_points)
            return self._state
