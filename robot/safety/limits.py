"""Joint limits in LeRobot's units, derived from an arm's calibration."""

from collections.abc import Mapping
from dataclasses import dataclass

from robot.joints import GRIPPER, JOINT_NAMES

_STEPS_PER_TURN = 4095  # LeRobot's DEGREES normalisation divides by resolution - 1


@dataclass(frozen=True)
class JointLimits:
    """Allowed command range of each joint: degrees for body joints, percent for the gripper."""

    low: Mapping[str, float]
    high: Mapping[str, float]

    def clamp(self, joint: str, value: float) -> float:
        """`value` brought inside the joint's range."""
        return min(self.high[joint], max(self.low[joint], value))

    def contains(self, joint: str, value: float) -> bool:
        """Whether `value` is inside the joint's range."""
        return self.low[joint] <= value <= self.high[joint]


def limits_from_calibration(
    ranges: Mapping[str, tuple[int, int]], *, margin_deg: float, gripper_margin_percent: float
) -> JointLimits:
    """Limits from each joint's (range_min, range_max) in encoder steps, shrunk by a margin.

    Body joints are normalised like LeRobot's DEGREES mode (0 at the middle of the range), the
    gripper like RANGE_0_100.
    """
    low: dict[str, float] = {}
    high: dict[str, float] = {}
    for joint in JOINT_NAMES:
        range_min, range_max = ranges[joint]
        if joint == GRIPPER:
            low[joint], high[joint] = gripper_margin_percent, 100.0 - gripper_margin_percent
            continue
        half_deg = (range_max - range_min) / 2 * 360 / _STEPS_PER_TURN
        margin = min(margin_deg, half_deg / 2)
        low[joint], high[joint] = -half_deg + margin, half_deg - margin
    return JointLimits(low=low, high=high)
