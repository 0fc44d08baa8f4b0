"""Engaging a follower on a new action source without a jump.

When a source (the leaders, a policy) starts, its first goal can be far from where the follower
is. Instead of slamming there, the follower is refused the jump and ramped toward the source's
goals at `ramp_speed_deg_s`; once every joint is within `engage_within_deg`, the source drives it
directly (the guard's caps still apply).
"""

from collections.abc import Mapping

from robot.joints import GRIPPER, JOINT_NAMES
from robot.safety.config import SafetyConfig
from robot.safety.ramp import max_difference, step_toward

BODY = tuple(j for j in JOINT_NAMES if j != GRIPPER)


class Engager:
    """One per follower; call `goal()` every tick until `engaged`."""

    def __init__(self, arm: str, config: SafetyConfig, start: Mapping[str, float]) -> None:
        self.arm = arm
        self.config = config
        self._goal = {j: float(start[j]) for j in JOINT_NAMES}
        self.engaged = False
        self.initial_difference_deg: float | None = None

    def goal(self, source: Mapping[str, float], dt_s: float) -> dict[str, float]:
        """What to command this tick, given the source's goal."""
        if self.engaged:
            return dict(source)
        difference = max_difference(source, self._goal, BODY)
        if self.initial_difference_deg is None:
            self.initial_difference_deg = difference
            if difference <= self.config.start_max_diff_deg:
                self.engaged = True  # close enough: follow at once (the guard still caps steps)
                return dict(source)
        self._goal = step_toward(self._goal, source, self.config.ramp_speed_deg_s * dt_s)
        if max_difference(source, self._goal, BODY) <= self.config.engage_within_deg:
            self.engaged = True
        return dict(self._goal)
