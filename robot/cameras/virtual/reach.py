"""Inverse kinematics for the scripted operator: the joint angles that put a gripper's grasp point somewhere.

The operator sees where the cloth lies and must reach it, as a person's hands would; the arm model is
the same forward kinematics the cameras draw (kinematics.py), so a solution here is where the
virtual cameras and the cloth see the gripper. Damped least squares over the four joints that
place the hand (shoulder_pan, shoulder_lift, elbow_flex, wrist_flex); wrist_roll and the gripper
are given. Besides the position, a soft term asks the jaws to point down at the table (a grasp
from above), which the solver gives up first where the arm cannot reach that far pointing down.
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from robot.cameras.virtual.kinematics import arm_pose
from robot.joints import GRIPPER

PLACING_JOINTS = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex")
# Each placing joint's reach either side of its calibrated middle, degrees: a little inside the
# virtual arms' mechanical ranges (about 2,400 steps, +-105 degrees), so a goal never pushes a stop.
JOINT_LIMIT_DEG = 100.0
POINTING_WEIGHT_M = 0.004  # metres of position error worth one unit of pointing error (jaws vs straight down)
# Where the jaws cannot point down and still reach, the position wins: the solve is repeated with
# the pointing term this many times weaker while the grasp point stays farther than CLOSE_ENOUGH_M.
WEAKER_POINTING = 10.0
CLOSE_ENOUGH_M = 0.003
_ITERATIONS = 60
_DAMPING = 1e-4
_STEP_DEG = 0.01  # finite-difference step of the Jacobian
_DOWN = np.array([0.0, 0.0, -1.0])


@dataclass(frozen=True)
class Reach:
    """One solution: the joints, and how well they reach."""

    joints: dict[str, float]  # degrees for the body joints, 0..100 for the gripper
    error_m: float  # distance from the grasp point to the target
    tilt_deg: float  # angle between the jaws and straight down


def _residual(
    q: np.ndarray, fixed: Mapping[str, float], base: np.ndarray, target: np.ndarray, weight_m: float
) -> np.ndarray:
    joints = dict(fixed) | dict(zip(PLACING_JOINTS, q, strict=True))
    pose = arm_pose(joints, base)
    jaws = pose.fixed_jaw[1] - pose.fixed_jaw[0]
    pointing = jaws / max(float(np.linalg.norm(jaws)), 1e-9) - _DOWN
    return np.concatenate([pose.grasp_point - target, weight_m * pointing])


def _solve(
    q: np.ndarray, fixed: Mapping[str, float], base: np.ndarray, target: np.ndarray, weight_m: float
) -> np.ndarray:
    for _ in range(_ITERATIONS):
        r = _residual(q, fixed, base, target, weight_m)
        jacobian = np.empty((len(r), len(q)))
        for k in range(len(q)):
            nudged = q.copy()
            nudged[k] += _STEP_DEG
            jacobian[:, k] = (_residual(nudged, fixed, base, target, weight_m) - r) / _STEP_DEG
        normal = jacobian.T @ jacobian + _DAMPING * np.eye(len(q))
        step = np.linalg.solve(normal, -jacobian.T @ r)
        q = np.clip(q + np.clip(step, -15.0, 15.0), -JOINT_LIMIT_DEG, JOINT_LIMIT_DEG)
        if np.linalg.norm(step) < 0.02:  # degrees: a fiftieth of a degree moves the jaws ~0.1 mm
            break
    return q


def solve_reach(
    target_m: np.ndarray,
    base: np.ndarray,
    start: Mapping[str, float],
    *,
    gripper: float,
    wrist_roll_deg: float = 0.0,
) -> Reach:
    """Joints that bring the grasp point (between the jaw tips at opening `gripper`, 0..100) to `target_m`.

    Args:
        target_m: (3,) world point, metres.
        base: (4, 4) the arm's base pose in the world (SceneLayout.base).
        start: the joints to start from (degrees); a nearby pose converges fastest.
        gripper: the opening the grasp point is taken at (the jaws' tips move as they open).
        wrist_roll_deg: held as given.
    """
    fixed = {"wrist_roll": wrist_roll_deg, GRIPPER: gripper}
    target = np.asarray(target_m, dtype=float)
    q = _solve(np.array([float(start[joint]) for joint in PLACING_JOINTS]), fixed, base, target, POINTING_WEIGHT_M)
    for weaker in (WEAKER_POINTING, WEAKER_POINTING**2):
        if float(np.linalg.norm(_residual(q, fixed, base, target, 0.0)[:3])) <= CLOSE_ENOUGH_M:
            break
        q = _solve(q, fixed, base, target, POINTING_WEIGHT_M / weaker)
    joints = fixed | dict(zip(PLACING_JOINTS, (float(v) for v in q), strict=True))
    pose = arm_pose(joints, base)
    jaws = pose.fixed_jaw[1] - pose.fixed_jaw[0]
    cosine = float(np.dot(jaws, _DOWN) / max(float(np.linalg.norm(jaws)), 1e-9))
    return Reach(
        joints=joints,
        error_m=float(np.linalg.norm(pose.grasp_point - target)),
        tilt_deg=math.degrees(math.acos(max(-1.0, min(1.0, cosine)))),
    )
