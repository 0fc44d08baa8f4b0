"""Driving the leader arms under torque to the followers' pose, for a handover to the person.

    begin(leaders' present pose)   torque on: each motor latches its goal where it is (no jump)
    step(target, now, period)      each leader's goal moves toward the target through its own
                                   ActionGuard in a transition: at most `ramp_speed_deg_s` a tick
    arrived(readings, target)      every joint read within `arrive_tolerance` of the target
    release()                      torque off: the leaders are the person's again
    freeze()                       an e-stop: the leaders keep torque where they are

A leader has the follower's joints and units (LeRobot's degrees, the gripper in percent), and its
guard is built from its own calibration, like a follower's: a goal never leaves its range and never
moves faster than a transition may. Driving is a change of the source of a leader's position (from
the person's hand to the motors), so it is bounded like every other transition.
"""

import logging
import time
from collections.abc import Mapping
from typing import Protocol

from robot.arm import JointPositions, JointReading
from robot.errors import RobotError
from robot.joint_values import JointValues
from robot.joints import GRIPPER, JOINT_NAMES, Side
from robot.safety.config import SafetyConfig
from robot.safety.guard import ActionGuard
from robot.safety.limits import JointLimits

logger = logging.getLogger(__name__)


class DrivenLeader(Protocol):
    """What driving needs of a leader arm."""

    @property
    def name(self) -> str:
        """e.g. `left_leader`."""
        ...

    def set_torque(self, enabled: bool) -> None:
        """Torque on (holding where it is) or off."""
        ...

    def write_joints(self, goal: JointPositions) -> JointPositions:
        """Send a goal; returns what the motors were sent."""
        ...

    def read_joints(self) -> JointReading:
        """Read the positions."""
        ...


class LeaderDrive:
    """Both leaders, driven together; one thread (the control loop's)."""

    def __init__(
        self, leaders: Mapping[Side, DrivenLeader], limits: Mapping[Side, JointLimits], safety: SafetyConfig
    ) -> None:
        self.leaders = dict(leaders)
        self.limits = dict(limits)
        self.safety = safety
        self.guards: dict[Side, ActionGuard] = {}
        self.driving = False  # torque is on and goals are being sent

    def begin(self, present: JointValues) -> None:
        """Torque on at the leaders' present pose; the next `step`s ramp from there.

        Raises:
            RobotError: a leader's bus failed (the other leader is released again).
        """
        self.guards = {}
        for side, leader in self.leaders.items():
            guard = ActionGuard(leader.name, self.limits[side], self.safety, present.side(side))
            guard.reset(present.side(side))
            guard.begin_transition("driving the leader to its follower")
            self.guards[side] = guard
        try:
            for leader in self.leaders.values():
                leader.set_torque(True)
        except RobotError:
            self._release_quietly()
            raise
        self.driving = True

    def step(self, target: JointValues, now_s: float, period_s: float) -> JointValues:
        """Send each leader one ramp step toward `target`; returns the goals sent."""
        sent = {}
        for side, leader in self.leaders.items():
            goal = self.guards[side].filter(target.side(side), now_s, period_s).sent
            sent[side] = leader.write_joints(goal)
        return JointValues.from_sides(sent)

    def arrived(self, readings: JointValues, target: JointValues, tolerance_deg: float) -> bool:
        """Whether every leader joint reads within `tolerance_deg` of the target (the gripper: percent)."""
        return all(gap <= tolerance_deg for gap, _, _ in self._gaps(readings, target))

    def distance(self, readings: JointValues, target: JointValues) -> str:
        """The joint furthest from the target, for a message ("left elbow_flex 7.2 deg away")."""
        gap, side, joint = max(self._gaps(readings, target))
        return f"{side} {joint} {gap:.1f} {'%' if joint == GRIPPER else 'deg'} away"

    def _gaps(self, readings: JointValues, target: JointValues) -> list[tuple[float, Side, str]]:
        """Each leader joint's distance from where its guard lets the target go."""
        return [
            (abs(readings[side, joint] - self.limits[side].clamp(joint, target[side, joint])), side, joint)
            for side in self.leaders
            for joint in JOINT_NAMES
        ]

    def release(self) -> None:
        """Torque off on both leaders (each on its own: one failed bus does not keep the other stiff).

        Raises:
            RobotError: a leader could not be released (it stays stiff; the exit releases it again).
        """
        self.driving = False
        failed = self._release_quietly()
        if failed:
            raise failed[0]

    def freeze(self) -> None:
        """An e-stop while driving: each leader commanded to where it is, torque kept on."""
        if not self.driving:
            return
        self.driving = False
        for side, leader in self.leaders.items():
            try:
                present = leader.read_joints().positions
                leader.write_joints(present)
                self.guards[side].reset(present, time.monotonic())
            except RobotError as e:
                logger.error("%s could not be frozen: %s", leader.name, e)

    def _release_quietly(self) -> list[RobotError]:
        failed = []
        for leader in self.leaders.values():
            try:
                leader.set_torque(False)
            except RobotError as e:
                logger.error("%s could not be released: %s", leader.name, e)
                failed.append(e)
        return failed
