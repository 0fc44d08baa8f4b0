"""Go-to-rest: the followers move to their rest pose at the ramp speed, each arm on its own (a session's end).

    every 1/fps s: each arm's goal steps toward its rest pose by ramp_speed_deg_s / fps -> write
    then, for up to REST_SETTLE_S: read until every arm is within REST_TOLERANCE_DEG of it

A bus that fails takes only its own arm out of the move (it keeps torque where it is: released, it
would fall); the other goes on. A stop (an e-stop) ends the move of both where they are.
`rest_followers` is the rig's use of it: from the guards' last goals, re-anchoring them on arrival.
"""

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from robot.arm import JointPositions, JointReading
from robot.errors import RobotError
from robot.joint_values import JointValues
from robot.joints import GRIPPER, JOINT_NAMES, Side
from robot.safety.config import ExitMode
from robot.safety.guard import ActionGuard
from robot.safety.ramp import max_difference, step_toward

logger = logging.getLogger(__name__)
REST_TOLERANCE_DEG = 1.0
REST_TIMEOUT_S = 15.0
REST_SETTLE_S = 2.0  # after the last goal, how long to wait for the joints to arrive
BODY = tuple(j for j in JOINT_NAMES if j != GRIPPER)


class RestingArm(Protocol):
    """What the move needs of an arm."""

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


@dataclass(frozen=True)
class RestMove:
    """How the move ended."""

    completed: dict[str, bool]  # per arm: its move ran without a bus failure (safe to release there)
    present: dict[str, dict[str, float]]  # the last positions read, of the arms that answered
    stopped: bool  # a stop ended it early


def move_to_rest(
    arms: Mapping[str, RestingArm],
    start: Mapping[str, Mapping[str, float]],
    rest: Mapping[str, Mapping[str, float]],
    ramp_speed_deg_s: float,
    stop: Callable[[], bool],
    *,
    fps: float,
) -> RestMove:
    """Move every arm from its `start` goal to its `rest` pose (blocking), `fps` goals a second.

    See the module docstring.
    """
    failed: set[str] = set()

    def each[T](call: Callable[[str], T], what: str) -> dict[str, T]:
        results: dict[str, T] = {}
        for name in arms:
            if name in failed:
                continue
            try:
                results[name] = call(name)
            except RobotError as e:
                failed.add(name)
                logger.error("%s stopped on its way to rest (%s failed: %s); it keeps torque", name, what, e)
        return results

    step = ramp_speed_deg_s / fps
    period = 1.0 / fps
    goals = {name: dict(start[name]) for name in arms}
    deadline = time.monotonic() + REST_TIMEOUT_S
    while time.monotonic() < deadline and not stop():
        goals = {name: step_toward(goals[name], rest[name], step) for name in arms}
        each(lambda name, g=goals: arms[name].write_joints(g[name]), "a write")
        time.sleep(period)
        if all(max_difference(goals[name], rest[name]) < 1e-6 for name in arms):
            break
    if stop():
        return RestMove({name: False for name in arms}, {}, stopped=True)
    settle_until = time.monotonic() + REST_SETTLE_S
    while True:
        present = each(lambda name: arms[name].read_joints().positions, "a read")
        arrived = all(max_difference(p, rest[name], BODY) < REST_TOLERANCE_DEG for name, p in present.items())
        if arrived or time.monotonic() > settle_until or stop():
            break
        time.sleep(period)
    # An arm still on its way after the settle time rests near enough to release; a failed one does not.
    return RestMove({name: name not in failed for name in arms}, {n: dict(p) for n, p in present.items()}, stop())


def rests_at_exit(on_exit: ExitMode, *, frozen: bool, stopped: bool) -> bool:
    """Whether the followers go to rest as the session ends.

    As `on_exit` asks, and always after a safety stop (`stopped`); never once an e-stop froze them.
    """
    return not frozen and (on_exit is ExitMode.REST_THEN_RELEASE or stopped)


def rest_followers(
    followers: Mapping[Side, RestingArm],
    guards: Mapping[Side, ActionGuard],
    rest_pose: JointValues,
    ramp_speed_deg_s: float,
    stop: Callable[[], bool],
    *,
    fps: float,
) -> RestMove:
    """Move the followers from their guards' last goals to their rest poses (blocking).

    Unless a stop ended the move, each guard is then re-anchored on where its arm was last read (an
    arm that failed keeps its guard as it was). After a stop the caller freezes the followers.
    """
    side_of = {arm.name: side for side, arm in followers.items()}
    move = move_to_rest(
        {name: followers[side] for name, side in side_of.items()},
        {name: guards[side].last_sent for name, side in side_of.items()},
        {name: rest_pose.side(side) for name, side in side_of.items()},
        ramp_speed_deg_s,
        stop,
        fps=fps,
    )
    if not move.stopped:
        for name, positions in move.present.items():
            guards[side_of[name]].reset(positions, time.monotonic())
    return move
