"""Joint names, motor IDs, sides, arm roles and camera roles of a bimanual SO-101 rig: the one place they live.

The rig's vocabulary, for every layer: the evaluation layer imports it too (tests/support/layering.py
lists it), so it stands on the standard library alone. The dataset's own names (its feature keys)
live in teleop/dataset/vocabulary.py.

Units follow LeRobot's SO-101 classes (`use_degrees=True`) so datasets stay interchangeable:
body joints in degrees around the middle of the calibrated range, the gripper in percent of its
calibrated range (0 = closed, 100 = open).
"""

from enum import StrEnum

JOINT_NAMES: tuple[str, ...] = (
    "shoulder_pan",
    "shoulder_lift",
    "elbow_flex",
    "wrist_flex",
    "wrist_roll",
    "gripper",
)
# Factory wiring of an SO-101 arm: motor IDs 1..6 in joint order.
MOTOR_IDS: dict[str, int] = {name: index + 1 for index, name in enumerate(JOINT_NAMES)}
GRIPPER = "gripper"
# The joints that move the arm (all but the gripper), in joint order.
BODY_JOINTS: tuple[str, ...] = tuple(joint for joint in JOINT_NAMES if joint != GRIPPER)
# LeRobot's calibration records this joint as a full turn instead of a measured range.
FULL_TURN_JOINT = "wrist_roll"


class Side(StrEnum):
    """Which arm of the pair; the value is the prefix of its feature names (`left_shoulder_pan.pos`)."""

    LEFT = "left"
    RIGHT = "right"


class Role(StrEnum):
    """Follower arms do the work; leader arms are moved by the operator's hands."""

    FOLLOWER = "follower"
    LEADER = "leader"


def arm_name(side: Side, role: Role) -> str:
    """The canonical arm name, e.g. `left_follower` (also the virtual bus's name)."""
    return f"{side}_{role}"


ARM_NAMES: tuple[str, ...] = tuple(arm_name(side, role) for role in Role for side in Side)


def joint_key(side: Side, joint: str) -> str:
    """LeRobot's bimanual feature key, e.g. `left_shoulder_pan.pos`."""
    return f"{side}_{joint}.pos"


BIMANUAL_KEYS: tuple[str, ...] = tuple(joint_key(side, joint) for side in Side for joint in JOINT_NAMES)


class CameraRole(StrEnum):
    """The cameras the product expects, by where they sit: a wrist camera per side, one above the table.

    Each is a dataset's video key `observation.images.<role>`, a view the rubrics and the judge speak,
    and what a virtual camera looks at (robot/cameras/config.py).
    """

    LEFT_WRIST = "left_wrist"  # from the left gripper: its jaws, the table, the cloth
    RIGHT_WRIST = "right_wrist"
    OVERHEAD = "overhead"  # both arms, the table and the cloth from above


CAMERA_ROLES: tuple[str, ...] = tuple(role.value for role in CameraRole)
