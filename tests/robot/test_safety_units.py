"""The safety layer's parts on their own: guard, limits, engager, watchdog."""

import math

import pytest

from robot.arm import ArmHealth, MotorHealth
from robot.errors import ConfigError
from robot.joints import JOINT_NAMES
from robot.safety.config import SafetyConfig
from robot.safety.engage import Engager
from robot.safety.guard import ActionGuard, Intervention
from robot.safety.limits import limits_from_calibration
from robot.safety.watchdog import Verdict, Watchdog

RANGES = dict.fromkeys(JOINT_NAMES, (1000, 3000))  # +-88 degrees
ZERO = dict.fromkeys(JOINT_NAMES, 0.0) | {"gripper": 50.0}


def guard(**config) -> ActionGuard:
    cfg = SafetyConfig(**config)
    limits = limits_from_calibration(RANGES, margin_deg=cfg.limit_margin_deg, gripper_margin_percent=1.0)
    g = ActionGuard("left_follower", limits, cfg, ZERO)
    g.reset(ZERO, 0.0)
    return g


def test_limits_follow_the_calibration_with_a_margin():
    limits = limits_from_calibration(RANGES, margin_deg=2.0, gripper_margin_percent=1.0)
    half = 1000 * 360 / 4095
    assert limits.high["elbow_flex"] == pytest.approx(half - 2.0)
    assert limits.low["elbow_flex"] == pytest.approx(-half + 2.0)
    assert (limits.low["gripper"], limits.high["gripper"]) == (1.0, 99.0)


def test_non_finite_values_are_refused_whole():
    g = guard()
    result = g.filter(ZERO | {"elbow_flex": math.nan, "wrist_flex": 5.0}, now_s=1 / 30)
    assert result.sent == g.last_sent == ZERO  # nothing moves, not even the finite joints
    assert [(e.joint, e.kind) for e in result.events] == [("elbow_flex", Intervention.NON_FINITE)]
    result = g.filter(ZERO | {"shoulder_pan": math.inf}, now_s=2 / 30)
    assert result.sent["shoulder_pan"] == 0.0


def test_goals_beyond_the_range_are_clamped():
    g = guard(max_step_deg=500, max_velocity_deg_s=1e5, max_gripper_step_percent=100)
    result = g.filter(ZERO | {"shoulder_lift": 170.0, "gripper": 120.0}, now_s=1 / 30)
    assert result.sent["shoulder_lift"] == pytest.approx(1000 * 360 / 4095 - 2.0)
    assert result.sent["gripper"] == 99.0
    assert {(e.joint, e.kind) for e in result.events} == {
        ("shoulder_lift", Intervention.LIMIT),
        ("gripper", Intervention.LIMIT),
    }


def test_steps_are_capped_per_tick():
    g = guard(max_step_deg=5.0, max_velocity_deg_s=1e5)
    result = g.filter(ZERO | {"wrist_roll": 40.0}, now_s=1 / 30)
    assert result.sent["wrist_roll"] == 5.0
    assert result.events[0].kind is Intervention.STEP
    assert g.filter(ZERO | {"wrist_roll": 40.0}, now_s=2 / 30).sent["wrist_roll"] == 10.0


def test_speed_is_capped_over_time():
    g = guard(max_step_deg=90.0, max_velocity_deg_s=60.0)
    result = g.filter(ZERO | {"shoulder_pan": 30.0}, now_s=1 / 30)  # 60 deg/s * 1/30 s = 2 degrees
    assert result.sent["shoulder_pan"] == pytest.approx(2.0)
    assert result.events[0].kind is Intervention.VELOCITY


def test_the_gripper_has_its_own_step_cap_and_no_speed_cap():
    g = guard(max_velocity_deg_s=1.0, max_gripper_step_percent=25.0)
    assert g.filter(ZERO | {"gripper": 70.0}, now_s=1 / 30).sent["gripper"] == 70.0
    result = g.filter(ZERO | {"gripper": 10.0}, now_s=2 / 30)
    assert result.sent["gripper"] == 45.0
    assert [e.kind for e in result.events] == [Intervention.STEP]


def test_a_long_pause_does_not_allow_a_jump():
    g = guard(max_step_deg=90.0, max_velocity_deg_s=60.0)
    result = g.filter(ZERO | {"shoulder_pan": 30.0}, now_s=100.0)
    assert result.sent["shoulder_pan"] == pytest.approx(4.0)  # capped at two ticks' worth


def test_engager_refuses_a_jump_then_ramps_to_the_source():
    config = SafetyConfig(start_max_diff_deg=10.0, ramp_speed_deg_s=30.0, engage_within_deg=2.0)
    engager = Engager("left_follower", config, ZERO)
    leader = ZERO | {"shoulder_lift": 45.0}
    first = engager.goal(leader, dt_s=1 / 30)
    assert first["shoulder_lift"] == pytest.approx(1.0)  # 30 deg/s, not a 45-degree jump
    assert not engager.engaged
    for _ in range(60):
        goal = engager.goal(leader, dt_s=1 / 30)
    assert engager.engaged
    assert goal == leader


def test_engager_follows_at_once_when_close():
    engager = Engager("left_follower", SafetyConfig(), ZERO)
    leader = ZERO | {"elbow_flex": 4.0}
    assert engager.goal(leader, dt_s=1 / 30) == leader
    assert engager.engaged


def health(t: float, **overrides) -> ArmHealth:
    motors = {j: MotorHealth(0, 30.0, 5.0, 12.0) for j in JOINT_NAMES}
    motors.update(overrides)
    return ArmHealth(motors=motors, t_s=t)


def test_watchdog_holds_when_warm_rests_when_hot_and_on_error_bits():
    dog = Watchdog("left_follower", SafetyConfig(hold_temperature_c=55, max_temperature_c=65, cool_down_deg=3))
    assert dog.update(health(0)).verdict is Verdict.OK
    assert dog.update(health(1, gripper=MotorHealth(0, 56.0, 5.0, 12.0))).verdict is Verdict.HOLD
    assert dog.update(health(2, gripper=MotorHealth(0, 53.5, 5.0, 12.0))).verdict is Verdict.HOLD  # hysteresis
    assert dog.update(health(3, gripper=MotorHealth(0, 51.0, 5.0, 12.0))).verdict is Verdict.OK
    hot = dog.update(health(4, gripper=MotorHealth(0, 66.0, 5.0, 12.0)))
    assert hot.verdict is Verdict.REST
    assert "gripper" in hot.reason
    assert dog.update(health(5, elbow_flex=MotorHealth(32, 30.0, 5.0, 12.0))).verdict is Verdict.REST


def test_watchdog_holds_on_sustained_load_only():
    dog = Watchdog("right_follower", SafetyConfig(max_load_percent=80, load_hold_s=2.0))
    loaded = MotorHealth(0, 30.0, 90.0, 12.0)
    assert dog.update(health(10.0, gripper=loaded)).verdict is Verdict.OK
    assert dog.update(health(11.0, gripper=loaded)).verdict is Verdict.OK
    assert dog.update(health(12.5, gripper=loaded)).verdict is Verdict.HOLD
    assert dog.update(health(13.0)).verdict is Verdict.OK


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_step_deg", 0, "safety.max_step_deg=0"),
        ("hold_temperature_c", 70, "hold < max"),
        ("limit_margin_deg", -1, "safety.limit_margin_deg=-1"),
        ("start_max_diff_deg", 1, "engage_within_deg"),
    ],
)
def test_bad_safety_settings_name_the_field(field, value, message):
    with pytest.raises(ConfigError, match=message):
        SafetyConfig(**{field: value})
