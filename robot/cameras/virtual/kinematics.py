"""SO-101 forward kinematics from the public URDF's joint origins and axes (metres, radians).

Source: TheRobotStudio/SO-ARM100, `Simulation/SO101/so101_new_calib.urdf` (read at commit
0aee1d0f): the "new calibration" model, whose zero is the middle of each joint's range, like
LeRobot's degrees. Every revolute joint turns about the z axis of its own frame. We assume
LeRobot's signs match the URDF's: at zero the upper arm stands up and the forearm points forward
(base -y); positive shoulder_lift, elbow_flex and wrist_flex lower the hand.

The jaws are simplified to two segments: the URDF gives the moving jaw's pivot and range; the
jaw shapes are straight lines of about the real length.
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from robot.joints import GRIPPER

_PI = math.pi
# (joint, origin xyz in the parent link [m], origin rpy [rad]) along the chain base -> gripper.
_CHAIN: tuple[tuple[str, tuple[float, float, float], tuple[float, float, float]], ...] = (
    ("shoulder_pan", (0.0207909, -0.0230745, 0.0948817), (-_PI, 0.0, _PI / 2)),
    ("shoulder_lift", (-0.0303992, -0.0182778, -0.0542), (-_PI / 2, -_PI / 2, 0.0)),
    ("elbow_flex", (-0.11257, -0.028, 0.0), (0.0, 0.0, _PI / 2)),
    ("wrist_flex", (-0.1349, 0.0052, 0.0), (0.0, 0.0, -_PI / 2)),
    ("wrist_roll", (0.0, -0.0611, 0.0181), (_PI / 2, 0.0, _PI)),
)
BODY_JOINTS: tuple[str, ...] = tuple(joint for joint, _, _ in _CHAIN)
# In the gripper link: the fixed jaw's tip (URDF frame `gripperframe`), the fixed jaw's root, and
# the moving jaw's pivot (URDF joint `gripper`, moved onto the jaws' plane y = 0).
FIXED_JAW_TIP_M = np.array([-0.0079, 0.0, -0.0981])
FIXED_JAW_ROOT_M = np.array([-0.0079, 0.0, -0.030])
JAW_PIVOT_M = np.array([0.0202, 0.0, -0.0234])
_JAW_LENGTH_M = float(np.linalg.norm(FIXED_JAW_TIP_M - JAW_PIVOT_M))
_JAW_CLOSED_DIR = (FIXED_JAW_TIP_M - JAW_PIVOT_M) / _JAW_LENGTH_M
# URDF limits of the gripper joint: LeRobot's 0 (closed) .. 100 (open) spans this range.
JAW_RANGE_RAD = (-0.174533, 1.74533)
# The pan axis sits off the base link's origin; placing an arm puts this point on its spot.
PAN_AXIS_XY_M = (0.0207909, -0.0230745)


def _rpy(roll: float, pitch: float, yaw: float) -> np.ndarray:
    cr, sr, cp, sp, cy, sy = (
        math.cos(roll),
        math.sin(roll),
        math.cos(pitch),
        math.sin(pitch),
        math.cos(yaw),
        math.sin(yaw),
    )
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def transform(xyz: tuple[float, float, float] | np.ndarray, rotation: np.ndarray | None = None) -> np.ndarray:
    """A 4x4 homogeneous transform from a translation and an optional 3x3 rotation."""
    matrix = np.eye(4)
    matrix[:3, 3] = xyz
    if rotation is not None:
        matrix[:3, :3] = rotation
    return matrix


def rot_z(angle_rad: float) -> np.ndarray:
    """A 3x3 rotation about z."""
    c, s = math.cos(angle_rad), math.sin(angle_rad)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


_ORIGINS = tuple(transform(xyz, _rpy(*rpy)) for _, xyz, rpy in _CHAIN)


@dataclass(frozen=True, eq=False)
class ArmPose:
    """Where one arm is, in world coordinates (metres)."""

    points: np.ndarray  # (7, 3): base, shoulder_pan, shoulder_lift, elbow, wrist_flex, wrist_roll, jaw tip
    gripper: np.ndarray  # (4, 4): the gripper link's pose in the world
    fixed_jaw: np.ndarray  # (2, 3): root, tip
    moving_jaw: np.ndarray  # (2, 3): pivot, tip
    opening: float  # 0 = closed .. 1 = open

    @property
    def grasp_point(self) -> np.ndarray:
        """Between the jaw tips: where the gripper takes hold of the cloth."""
        return 0.5 * (self.fixed_jaw[1] + self.moving_jaw[1])


def arm_pose(joints: Mapping[str, float], base: np.ndarray) -> ArmPose:
    """Forward kinematics of one arm.

    Args:
        joints: degrees for the body joints, 0..100 for the gripper, keyed by `JOINT_NAMES`.
        base: (4, 4) pose of the arm's base link in the world.
    """
    frame = base
    points = [base[:3, 3]]
    for origin, joint in zip(_ORIGINS, BODY_JOINTS, strict=True):
        frame = frame @ origin @ transform((0.0, 0.0, 0.0), rot_z(math.radians(joints[joint])))
        points.append(frame[:3, 3])
    opening = min(1.0, max(0.0, joints[GRIPPER] / 100.0))
    # Opening turns the jaw away from the fixed one, in the jaws' (x, z) plane.
    angle = opening * (JAW_RANGE_RAD[1] - JAW_RANGE_RAD[0])
    c, s = math.cos(angle), math.sin(angle)
    dx, dz = _JAW_CLOSED_DIR[0], _JAW_CLOSED_DIR[2]
    moving_tip = JAW_PIVOT_M + _JAW_LENGTH_M * np.array([dx * c - dz * s, 0.0, dx * s + dz * c])
    local = np.stack([FIXED_JAW_ROOT_M, FIXED_JAW_TIP_M, JAW_PIVOT_M, moving_tip])
    world = local @ frame[:3, :3].T + frame[:3, 3]
    points.append(world[1])
    return ArmPose(np.array(points), frame, world[:2], world[2:], opening)
