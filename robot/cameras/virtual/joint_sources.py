"""Joint-state sources for virtual cameras without a virtual rig: a fixed pose and a scripted fold.

The rig passes its own source (the followers' last read positions); these serve tests, the camera
benchmark and demos. The fold's poses were found by solving this package's forward kinematics for
grasp points on the default layout's cloth (left arm; the right arm mirrors pan and roll).
"""

import itertools
import math
import time
from collections.abc import Callable

import numpy as np

from robot.cameras.virtual.scene import JointSource
from robot.joint_values import JointValues
from robot.joints import JOINT_NAMES, Side

# shoulder_pan, shoulder_lift, elbow_flex, wrist_flex, wrist_roll (degrees), gripper (0..100)
_READY = (16.6, -60.8, 0.9, 100.0, 0.0, 10.0)
_FOLD_LEFT: tuple[tuple[float, tuple[float, ...]], ...] = (
    (0.0, _READY),
    (1.5, (51.8, -15.9, 29.6, 66.6, 0.0, 80.0)),  # above the cloth's near-left corner, open
    (2.5, (51.8, 6.4, 35.7, 43.8, 0.0, 80.0)),  # down at the corner
    (3.0, (51.8, 6.4, 35.7, 43.8, 0.0, 5.0)),  # close on it
    (4.5, (35.0, -9.9, 4.6, 65.8, 0.0, 5.0)),  # lift
    (6.0, (23.6, 40.5, -27.1, 38.4, 0.0, 5.0)),  # over the far-left corner
    (7.0, (23.3, 56.8, -38.1, 36.5, 0.0, 5.0)),  # lay it down
    (7.5, (23.3, 56.8, -38.1, 36.5, 0.0, 80.0)),  # let go
    (8.5, (25.0, 31.4, -39.4, 62.8, 0.0, 80.0)),  # rise
    (10.0, _READY),
)
FOLD_DURATION_S = _FOLD_LEFT[-1][0]
_MIRRORED = ("shoulder_pan", "wrist_roll")


def _both(left: tuple[float, ...]) -> JointValues:
    """Both arms from the left arm's values; the right arm mirrors pan and roll."""
    mirror = {side: [-1.0 if side is Side.RIGHT and j in _MIRRORED else 1.0 for j in JOINT_NAMES] for side in Side}
    return JointValues(np.array([np.multiply(left, mirror[side]) for side in Side]))


def ready_pose() -> JointValues:
    """Both arms raised above the table's near edge, grippers almost closed."""
    return _both(_READY)


def constant_source(positions: JointValues | None = None) -> JointSource:
    """A source that always returns `positions` (default: `ready_pose()`)."""
    fixed = positions or ready_pose()
    return lambda: fixed


def fold_source(clock: Callable[[], float] = time.monotonic, start_s: float | None = None) -> JointSource:
    """Both arms fold the cloth's near edge onto its far edge, then return; repeats every 10 s.

    After the first cycle the cloth stays folded (the arms then fold it back and forth).
    """
    origin_s = clock() if start_s is None else start_s

    def positions() -> JointValues:
        t = (clock() - origin_s) % FOLD_DURATION_S
        for (t0, a), (t1, b) in itertools.pairwise(_FOLD_LEFT):
            if t <= t1:
                s = (t - t0) / (t1 - t0)
                s = 0.5 - 0.5 * math.cos(math.pi * s)  # ease in and out
                values = tuple(x + s * (y - x) for x, y in zip(a, b, strict=True))
                return _both(values)
        return ready_pose()

    return positions
