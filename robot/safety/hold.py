"""A watchdog hold: the followers kept at the goals they had when it began, until the watchdog lets go.

    verdict HOLD -> pose_for(guards): the pose to resend, the guards' last goals at the hold's first tick
    verdict OK   -> end(): whether a hold was on

The end of a hold is a transition (the rig begins one): the source's goals moved on while the arms held.
"""

from collections.abc import Mapping

from robot.joint_values import JointValues
from robot.joints import Side
from robot.safety.guard import ActionGuard


class Hold:
    """The rig's watchdog hold. One thread (the rig's)."""

    def __init__(self) -> None:
        self.pose: JointValues | None = None  # None: no hold on

    def pose_for(self, guards: Mapping[Side, ActionGuard]) -> JointValues:
        """The pose to hold this tick: the guards' last goals when the hold began."""
        if self.pose is None:
            self.pose = JointValues.from_sides({side: guard.last_sent for side, guard in guards.items()})
        return self.pose

    def end(self) -> bool:
        """End the hold, if one is on; whether one was."""
        held, self.pose = self.pose is not None, None
        return held
