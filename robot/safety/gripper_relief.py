"""Gripper relief: a gripper squeezing an object too hard is not commanded to close any further.

    each tick:  observed(jaw position) ... sent(gripper goal)
    each poll:  poll(watchdog says "loaded")  -> armed only if the jaws are also still and driven closed
    each act:   limit(goal, jaws)             -> the goal, raised to the floor while a grasp lasts
    GripperReliefs: both followers' reliefs, applied to the rig's goals before the guards

Relief is for jaws that squeeze something: loaded, driven closed and still. A gripper closing fast in
free air is loaded too, but it moves (or was only just told to close), so a poll's "loaded" arms the
relief only when, over the last `GRIPPER_STALL_TICKS`, the jaws stayed within the band and every goal
sent was below them by more than the band. Once armed, the floor (a little below where the jaws are)
holds until the source opens the gripper past it (the grasp is over), so the relief does not switch
on and off with every health poll.
"""

from collections import deque
from collections.abc import Mapping

from robot.arm import JointReading
from robot.joints import GRIPPER, Side
from robot.safety.guard import ActionGuard, Intervention, SafetyEvent

# A relieved gripper may still press this far past where it is, percent: enough to hold the cloth.
GRIPPER_RELIEF_SQUEEZE_PERCENT = 3.0
GRIPPER_STALL_BAND_PERCENT = 1.5  # percent
GRIPPER_STALL_TICKS = 4


class GripperRelief:
    """One follower's gripper relief. One thread (the rig's)."""

    def __init__(self) -> None:
        self._seen: deque[float] = deque(maxlen=GRIPPER_STALL_TICKS)  # jaw positions, %
        self._sent: deque[float] = deque(maxlen=GRIPPER_STALL_TICKS)  # goals sent, %
        self._armed = False  # the last poll found it squeezing: a floor is set at the next act
        self.floor: float | None = None  # the gripper is not commanded below this, %

    def observed(self, jaws_percent: float) -> None:
        """The jaws' position this tick."""
        self._seen.append(jaws_percent)

    def sent(self, goal_percent: float) -> None:
        """The goal that reached the gripper this tick."""
        self._sent.append(goal_percent)

    def poll(self, loaded: bool) -> None:
        """A fresh health poll: squeezing means loaded *and* still while driven closed, right now."""
        self._armed = loaded and self._stalled()

    def limit(self, goal_percent: float, jaws_percent: float | None) -> float | None:
        """The goal to send instead of `goal_percent` when relief holds it (None: send it as asked)."""
        if self.floor is None and self._armed and jaws_percent is not None:
            self.floor = jaws_percent - GRIPPER_RELIEF_SQUEEZE_PERCENT
            self._armed = False  # this poll's verdict is used up; the next poll may renew it
        if self.floor is None:
            return None
        if goal_percent > self.floor + GRIPPER_RELIEF_SQUEEZE_PERCENT:
            self.floor = None  # the source let go
            return None
        return self.floor if goal_percent < self.floor else None

    @property
    def jaws_percent(self) -> float | None:
        """Where the jaws were last observed, percent (None before the first observation)."""
        return self._seen[-1] if self._seen else None

    def _stalled(self) -> bool:
        seen, sent = self._seen, self._sent
        if len(seen) < GRIPPER_STALL_TICKS or len(sent) < GRIPPER_STALL_TICKS:
            return False
        still = max(seen) - min(seen) <= GRIPPER_STALL_BAND_PERCENT
        driven = all(goal < position - GRIPPER_STALL_BAND_PERCENT for goal, position in zip(sent, seen, strict=True))
        return still and driven


class GripperReliefs:
    """Both followers' gripper relief, as the rig applies it each tick. One thread (the rig's)."""

    def __init__(self) -> None:
        self.sides = {side: GripperRelief() for side in Side}

    def observed(self, followers: Mapping[Side, JointReading]) -> None:
        """This tick's follower readings (the jaws' positions)."""
        for side, relief in self.sides.items():
            relief.observed(followers[side].positions[GRIPPER])

    def sent(self, gripper_goals: Mapping[Side, float]) -> None:
        """The gripper goals that reached the followers this tick, percent."""
        for side, relief in self.sides.items():
            relief.sent(gripper_goals[side])

    def apply(self, goals: Mapping[Side, dict[str, float]], guards: Mapping[Side, ActionGuard]) -> list[SafetyEvent]:
        """Keep each squeezing gripper from closing further: its goal raised in place, before its guard.

        Returns one event per gripper relieved this tick.
        """
        events = []
        for side, relief in self.sides.items():
            floor = relief.limit(goals[side][GRIPPER], relief.jaws_percent)
            if floor is None:
                continue
            events.append(SafetyEvent(guards[side].arm, GRIPPER, Intervention.RELIEF, goals[side][GRIPPER], floor))
            goals[side][GRIPPER] = floor
            # Re-anchor the guard: the jaws are really at the floor, so moving the goal up to
            # it is no jump (the command was further closed than the jaws could go).
            guard = guards[side]
            guard.last_sent[GRIPPER] = max(guard.last_sent[GRIPPER], floor)
        return events
