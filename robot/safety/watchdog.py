"""Thermal and load watchdog: turns motor health into hold / rest decisions.

any error bit (overload, overheat, voltage...)   -> REST  (go to rest, release torque)
temperature >= max_temperature_c                 -> REST
temperature >= hold_temperature_c                -> HOLD  until it cools by cool_down_deg
|load| >= max_load_percent for load_hold_s       -> HOLD  until the load falls below it
"""

from dataclasses import dataclass
from enum import IntEnum

from robot.arm import ArmHealth
from robot.joints import GRIPPER
from robot.safety.config import SafetyConfig


class Verdict(IntEnum):
    """Ordered by severity."""

    OK = 0
    HOLD = 1
    REST = 2


@dataclass(frozen=True)
class WatchdogDecision:
    """What the followers should do, and why."""

    verdict: Verdict
    reason: str = ""
    # The gripper squeezes an object too hard: it should not be commanded to close any further.
    relieve_gripper: bool = False


class Watchdog:
    """One per follower arm; fed with its health polls."""

    def __init__(self, arm: str, config: SafetyConfig) -> None:
        self.arm = arm
        self.config = config
        self._overloaded_since: dict[str, float] = {}
        self._holding_for_heat = False
        self.decision = WatchdogDecision(Verdict.OK)

    def update(self, health: ArmHealth) -> WatchdogDecision:
        """Judge a fresh health reading."""
        config = self.config
        decisions = [WatchdogDecision(Verdict.OK)]
        gripper = health.motors.get(GRIPPER)
        relieve = gripper is not None and abs(gripper.load_percent) >= config.gripper_relief_load_percent
        for joint, errors in health.faults.items():
            if joint == GRIPPER and errors == ["overload"]:
                relieve = True  # a grasp tripped the overload protection: squeeze less, keep going
                continue
            decisions.append(WatchdogDecision(Verdict.REST, f"{self.arm} {joint} reports {', '.join(errors)}"))
        joint, hottest = max(health.motors.items(), key=lambda item: item[1].temperature_c)
        temperature = hottest.temperature_c
        if temperature >= config.max_temperature_c:
            decisions.append(WatchdogDecision(Verdict.REST, f"{self.arm} {joint} at {temperature:.0f} C"))
        threshold = config.hold_temperature_c - (config.cool_down_deg if self._holding_for_heat else 0.0)
        self._holding_for_heat = temperature >= threshold
        if self._holding_for_heat:
            decisions.append(WatchdogDecision(Verdict.HOLD, f"{self.arm} {joint} at {temperature:.0f} C, cooling"))
        for name, motor in health.motors.items():
            if abs(motor.load_percent) >= config.max_load_percent:
                since = self._overloaded_since.setdefault(name, health.t_s)
                if health.t_s - since >= config.load_hold_s:
                    decisions.append(
                        WatchdogDecision(Verdict.HOLD, f"{self.arm} {name} loaded {motor.load_percent:.0f}%")
                    )
            else:
                self._overloaded_since.pop(name, None)
        worst = max(decisions, key=lambda d: d.verdict)
        self.decision = WatchdogDecision(worst.verdict, worst.reason, relieve_gripper=relieve)
        return self.decision
