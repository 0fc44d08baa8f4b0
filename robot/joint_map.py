"""`--joint_map`: which column of a recording drives (or recorded) which rig joint.

    parse_joint_map("")        -> None: the recording has the rig's 12 `left_/right_<joint>.pos` names
    parse_joint_map("left")    -> a single-arm recording (shoulder_pan.pos ... gripper.pos) is the left arm
    parse_joint_map("right")   -> ... the right arm
    parse_joint_map('{"left_shoulder_pan.pos": "arm_a_pan"}')   -> rig joint -> dataset column, any subset

Both so101-replay (a recording drives the rig) and so101-fit (a recording of the user's followers
fits the virtual ones) read recordings this way, so one map means the same in both.
"""

import json

from robot.joints import BIMANUAL_KEYS, JOINT_NAMES, Side, joint_key
from robot.shell.errors import UsageError

SINGLE_ARM_NAMES: tuple[str, ...] = tuple(f"{joint}.pos" for joint in JOINT_NAMES)


class JointMapError(UsageError):
    """A `--joint_map` that is neither left, right nor a JSON object of rig joints."""


def parse_joint_map(text: str) -> dict[str, str] | None:
    """`left`, `right`, a JSON object (rig key -> dataset name), or "" for none.

    Raises:
        JointMapError: anything else, or rig keys that do not exist.
    """
    text = text.strip()
    if not text:
        return None
    if text in (Side.LEFT, Side.RIGHT):
        return {joint_key(Side(text), joint): f"{joint}.pos" for joint in JOINT_NAMES}
    example = """--joint_map='{"left_shoulder_pan.pos": "pan"}'"""
    try:
        mapping = json.loads(text)
    except json.JSONDecodeError as e:
        raise JointMapError(
            f"joint_map={text!r} is neither left, right nor a JSON object ({e.msg}). Next: --joint_map=left,"
            f" --joint_map=right, or which rig joint each column is, e.g. {example}"
        ) from e
    if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values()) or not mapping:
        raise JointMapError(
            f"joint_map={text!r}: expected a non-empty JSON object of rig joint -> dataset column. Next: e.g. {example}"
        )
    unknown = sorted(set(mapping) - set(BIMANUAL_KEYS))
    if unknown:
        raise JointMapError(
            f"joint_map: {', '.join(unknown)} are not rig joints. Next: use the rig's, {', '.join(BIMANUAL_KEYS)}"
        )
    return dict(mapping)
