"""The action guard: what a follower may be sent, whatever the action source asks.

Per command, in order:
1. any NaN or infinite value: the whole command is refused and the last sent goal is kept;
2. each joint is clamped into its calibrated range (minus a margin);
3. each joint's change is capped per step (`max_step_deg`) and by speed (`max_velocity_deg_s`
   times the time since the last command); the gripper by `max_gripper_step_percent` per step.
Every intervention is reported as a `SafetyEvent`, so a recording or a dry run can say which frame
and joint were clamped.
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from robot.joints import GRIPPER, JOINT_NAMES
from robot.safety.config import SafetyConfig
from robot.safety.limits import JointLimits

_MIN_DT_S = 1.0 / 30.0


class Intervention(StrEnum):
    """Why the guard changed a command."""

    NON_FINITE = "non_finite"
    LIMIT = "limit"
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
    """Filters one follower's goals. Stateful (remembers the last goal sent); one per arm."""

    def __init__(self, arm: str, limits: JointLimits, config: SafetyConfig, start: Mapping[str, float]) -> None:
        self.arm = arm
        self.limits = limits
        self.config = config
        self.last_sent = {j: limits.clamp(j, float(start[j])) for j in JOINT_NAMES}
        self._last_time_s: float | None = None

    def reset(self, positions: Mapping[str, float], now_s: float | None = None) -> None:
        """Re-anchor on the arm's actual positions (after a hold, a ramp, or a reconnect)."""
        self.last_sent = {j: self.limits.clamp(j, float(positions[j])) for j in JOINT_NAMES}
        self._last_time_s = now_s

    def filter(self, goal: Mapping[str, float], now_s: float) -> GuardResult:
        """The goal that may be sent at `now_s` (monotonic seconds)."""
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
        dt = self._elapsed(now_s)
        sent: dict[str, float] = {}
        for joint in JOINT_NAMES:
            value = requested[joint]
            limited = self.limits.clamp(joint, value)
            if limited != value:
                events.append(SafetyEvent(self.arm, joint, Intervention.LIMIT, value, limited))
            previous = self.last_sent[joint]
            if joint == GRIPPER:
                # A hand snaps a leader gripper shut faster than any arm joint moves; only a
                # per-step cap of its own applies (a jaw closing fast is not a flailing arm).
                cap, kind = self.config.max_gripper_step_percent, Intervention.STEP
            else:
                step_cap = self.config.max_step_deg
                velocity_cap = self.config.max_velocity_deg_s * dt
                cap, kind = (
                    (step_cap, Intervention.STEP) if step_cap <= velocity_cap else (velocity_cap, Intervention.VELOCITY)
                )
            delta = limited - previous
            if abs(delta) > cap:
                capped = previous + math.copysign(cap, delta)
                events.append(SafetyEvent(self.arm, joint, kind, value, capped))
                limited = capped
            sent[joint] = limited
        self.last_sent = sent
        self._last_time_s = now_s
        return GuardResult(dict(sent), tuple(events))

    def _elapsed(self, now_s: float) -> float:
        if self._last_time_s is None:
            return _MIN_DT_S
        # At least one 30 Hz period (a command may always move that much), and at most two: a
        # long gap (a hold, a pause) must not allow one huge jump.
        return min(max(now_s - self._last_time_s, _MIN_DT_S), 2 * _MIN_DT_S)
