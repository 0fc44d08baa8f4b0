"""Freezing the followers: each commanded to where it is now, torque on (an e-stop, a watchdog stop).

Each arm on its own: a bus that fails is logged and skipped, so it never keeps the other arm moving.
"""

import logging
import time
from collections.abc import Mapping
from typing import Protocol

from robot.arm import JointPositions, JointReading
from robot.errors import RobotError
from robot.joints import Side
from robot.safety.guard import ActionGuard

logger = logging.getLogger(__name__)


class FreezingArm(Protocol):
    """What a freeze needs of an arm."""

    @property
    def name(self) -> str:
        """The arm's name, e.g. `left_follower`."""
        ...

    def write_joints(self, goal: JointPositions) -> JointPositions:
        """Send a goal."""
        ...

    def read_joints(self) -> JointReading:
        """Read the positions."""
        ...


def command_present(followers: Mapping[Side, FreezingArm], guards: Mapping[Side, ActionGuard], reason: str) -> None:
    """Command each follower's present positions and re-anchor its guard there; `reason` is for the log."""
    for side, arm in followers.items():
        try:
            present = arm.read_joints().positions
            arm.write_joints(present)
            guards[side].reset(present, time.monotonic())
        except RobotError as e:
            logger.error("%s could not be frozen (%s): %s", arm.name, reason, e)
