"""The action guard: what a follower may be sent, whatever the action source asks.

Per command, in order:
1. any NaN or infinite value: the whole command is refused and the last sent goal is kept;
2. each joint is clamped into its calibrated range (minus a margin);
3. during a transition (see below), each joint moves at most `ramp_speed_deg_s` times the tick
   interval toward the request (the gripper: the same number in percent of its range);
4. each joint's change is capped per step (`max_step_deg`) and by speed (`max_velocity_deg_s`
   times the measured tick interval); the gripper by `max_gripper_step_percent` per step.
Every intervention is reported as a `SafetyEvent`, so a recording or a dry run can say which frame
and joint were clamped.

Transitions: whenever the source of the goals changes (the first goals after connect, a hold
ending, a policy taking charge or resuming after it starved, a replay starting), the goals may be
far from where the follower is. `begin_transition` re-anchors the guard on the arm's pose and the
requests are then ramped toward until one is reached; from the next command the normal caps apply.

Time: the per-tick limits come from the interval between commands on the caller's clock (the
control loop's tick starts), never floored, so the speed caps hold at any loop rate. The interval is
bounded by the nominal period for the ramp (a late tick never makes a bigger ramp step) and by two
periods for the velocity cap (a long gap, a hold, a pause, never allows one huge jump).
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from robot.joints import GRIPPER, JOINT_NAMES
from robot.safety.config import SafetyConfig
from robot.safety.limits import JointLimits

# The longest gap the velocity cap converts into distance, in nominal periods: a tick after a skipped
# deadline may cover two periods' worth; a pause of seconds may not cover seconds' worth at once.
_MAX_GAP_PERIODS = 2.0


class Intervention(StrEnum):
    """Why the guard changed a command."""

    NON_FINITE = "non_finite"
    LIMIT = "limit"
    RAMP = "ramp"  # a transition: the goal is approached at ramp_speed_deg_s
    STEP = "step"
    VELOCITY = "velocity"
    RELIEF = "relief"  # a squeezing gripper kept from closing further (the rig's gripper relief)


@dataclass(frozen=True)
class SafetyEvent:
    """One intervention on one joint."""

    arm: str
    joint: str
    kind: Intervention
    requested: float
    sent: float


@dataclass(frozen=True)
class GuardResult:
    """What the guard lets through, and why it differs from the request."""

    sent: dict[str, float]
    events: tuple[SafetyEvent, ...]


class ActionGuard:
    """Filters one follower's goals. Stateful (the last goal sent, a transition); one per arm.

    A new guard starts in a transition ("connect"): the first source to drive the arm is ramped to.
    """

    def __init__(self, arm: str, limits: JointLimits, config: SafetyConfig, start: Mapping[str, float]) -> None:
        self.arm = arm
        self.limits = limits
        self.config = config
        self.last_sent = {j: limits.clamp(j, float(start[j])) for j in JOINT_NAMES}
        self._last_time_s: float | None = None
        self.transition: str | None = "connect"  # why the goals are being ramped to; None: normal caps
        self.transitions = 1  # how many transitions began (the connect's among them)

    def reset(self, positions: Mapping[str, float], now_s: float | None = None) -> None:
        """Re-anchor on the arm's actual positions (after a hold, a ramp, a freeze)."""
        self.last_sent = {j: self.limits.clamp(j, float(positions[j])) for j in JOINT_NAMES}
        self._last_time_s = now_s

    def begin_transition(self, reason: str, positions: Mapping[str, float] | None = None) -> None:
        """The source of the goals changes: ramp from `positions` (default: the last goal sent)."""
        if positions is not None:
            self.reset(positions, self._last_time_s)
        self.transition = reason
        self.transitions += 1

    @property
    def in_transition(self) -> bool:
        """Whether the requests are being ramped to."""
        return self.transition is not None

    def filter(self, goal: Mapping[str, float], now_s: float, period_s: float) -> GuardResult:
        """The goal that may be sent at `now_s` (seconds on the caller's monotonic clock).

        `period_s`: the nominal tick interval of the caller's loop (it bounds the measured one).
        """
        events: list[SafetyEvent] = []
        requested = {j: float(goal.get(j, self.last_sent[j])) for j in JOINT_NAMES}
        bad = [j for j, v in requested.items() if not math.isfinite(v)]
        if bad:
            for joint in bad:
                events.append(
                    SafetyEvent(self.arm, joint, Intervention.NON_FINITE, requested[joint], self.last_sent[joint])
                )
            self._last_time_s = now_s
            return GuardResult(dict(self.last_sent), tuple(events))
        elapsed_s = period_s if self._last_time_s is None else max(0.0, now_s - self._last_time_s)
        ramp_step = self.config.ramp_speed_deg_s * min(elapsed_s, period_s) if self.in_transition else math.inf
        velocity_step = self.config.max_velocity_deg_s * min(elapsed_s, _MAX_GAP_PERIODS * period_s)
        sent: dict[str, float] = {}
        reached = True  # every joint got its (range-clamped) request
        for joint in JOINT_NAMES:
            value = requested[joint]
            limited = self.limits.clamp(joint, value)
            if limited != value:
                events.append(SafetyEvent(self.arm, joint, Intervention.LIMIT, value, limited))
            previous = self.last_sent[joint]
            if joint == GRIPPER:
                # A hand snaps a leader gripper shut faster than any arm joint moves; only a
                # per-step cap of its own applies (a jaw closing fast is not a flailing arm).
                caps = ((ramp_step, Intervention.RAMP), (self.config.max_gripper_step_percent, Intervention.STEP))
            else:
                caps = (
                    (ramp_step, Intervention.RAMP),
                    (self.config.max_step_deg, Intervention.STEP),
                    (velocity_step, Intervention.VELOCITY),
                )
            cap, kind = min(caps, key=lambda c: c[0])
            delta = limited - previous
            if abs(delta) > cap:
                capped = previous + math.copysign(cap, delta)
                events.append(SafetyEvent(self.arm, joint, kind, value, capped))
                limited = capped
                reached = False
            sent[joint] = limited
        if self.in_transition and reached:
            self.transition = None  # the request was reached: the normal caps apply from the next command
        self.last_sent = sent
        self._last_time_s = now_s
        return GuardResult(dict(sent), tuple(events))
