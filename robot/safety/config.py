"""Safety settings: on by default, every field with its unit and reason."""

from dataclasses import dataclass
from enum import StrEnum

from robot.config_checks import reject_non_finite
from robot.errors import ConfigError


class ExitMode(StrEnum):
    """What the followers do when a session ends (normally, on Ctrl-C, or on an error)."""

    HOLD = "hold"  # keep torque on where they are (an arm holding something must not drop it)
    REST_THEN_RELEASE = "rest_then_release"  # move to the rest pose slowly, then release torque


@dataclass(frozen=True)
class SafetyConfig:
    """Limits applied to every command before it reaches a follower."""

    # Stay this far inside each joint's calibrated range, degrees (LeRobot applies none).
    limit_margin_deg: float = 2.0
    # Same for the gripper, in percent of its range.
    gripper_margin_percent: float = 1.0
    # Largest change of one joint's goal in one command, degrees (LeRobot's max_relative_target, off by default there).
    max_step_deg: float = 12.0
    # Largest change of the gripper's goal in one command, percent of its range.
    max_gripper_step_percent: float = 25.0
    # Largest commanded joint speed, degrees per second: a little above what an STS3215 can do
    # (~265), so it never slows a real motion but spreads any jump over several ticks.
    max_velocity_deg_s: float = 300.0
    # Above this motor temperature the followers hold still until it cools by `cool_down_deg`, deg C.
    hold_temperature_c: float = 55.0
    # Above this temperature, or on any motor error bit, the followers go to rest and release, deg C.
    max_temperature_c: float = 65.0
    # Hysteresis before a held arm resumes, deg C.
    cool_down_deg: float = 3.0
    # A motor loaded above this percent of its torque for `load_hold_s` makes the followers hold.
    max_load_percent: float = 85.0
    # How long the load may stay above `max_load_percent`, seconds.
    load_hold_s: float = 2.0
    # A gripper loaded above this (or in overload protection) is not commanded to close further:
    # it keeps its grasp without squeezing itself hot, percent of max torque.
    gripper_relief_load_percent: float = 35.0
    # Whenever the source of the goals changes (teleop engages, a hold ends, a policy takes charge or
    # resumes after starving, a replay starts), the followers move from where they are to the new goal
    # at no more than this, degrees per second (the gripper: percent of its range per second); the
    # normal caps apply once the goal is reached. Going to rest uses it too.
    ramp_speed_deg_s: float = 30.0
    # What the followers do when the session ends.
    on_exit: ExitMode = ExitMode.REST_THEN_RELEASE

    def __post_init__(self) -> None:
        reject_non_finite(self, "safety")
        positive = (
            "max_step_deg",
            "max_gripper_step_percent",
            "max_velocity_deg_s",
            "ramp_speed_deg_s",
            "load_hold_s",
            "max_load_percent",
            "gripper_relief_load_percent",
        )
        for name in positive:
            value = getattr(self, name)
            if not value > 0:
                raise ConfigError(f"safety.{name}={value}: must be > 0")
        if not 0 <= self.limit_margin_deg < 45:
            raise ConfigError(f"safety.limit_margin_deg={self.limit_margin_deg}: expected 0..45 degrees")
        if not 0 <= self.gripper_margin_percent < 25:
            raise ConfigError(f"safety.gripper_margin_percent={self.gripper_margin_percent}: expected 0..25")
        if not self.hold_temperature_c < self.max_temperature_c <= 80:
            raise ConfigError(
                f"safety.hold_temperature_c={self.hold_temperature_c}, max_temperature_c={self.max_temperature_c}:"
                " expected hold < max <= 80 (the STS3215 shuts down at 70 by default)"
            )
