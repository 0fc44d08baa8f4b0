"""The safety layer's parts on their own: guard (caps, transitions), limits, watchdog."""

import math
import threading

import numpy as np
import pytest

from robot.arm import ArmHealth, MotorHealth
from robot.errors import ConfigError, MotorTimeoutError
from robot.joints import JOINT_NAMES
from robot.safety.config import SafetyConfig
from robot.safety.follower_watch import PollMisses
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
    g.transition = None  # these tests are about the normal caps; transitions have their own below
    return g


P30 = 1 / 30


def test_limits_follow_the_calibration_with_a_margin():
    limits = limits_from_calibration(RANGES, margin_deg=2.0, gripper_margin_percent=1.0)
    half = 1000 * 360 / 4095
    assert limits.high["elbow_flex"] == pytest.approx(half - 2.0)
    assert limits.low["elbow_flex"] == pytest.approx(-half + 2.0)
    assert (limits.low["gripper"], limits.high["gripper"]) == (1.0, 99.0)


def test_non_finite_values_are_refused_whole():
    g = guard()
    result = g.filter(ZERO | {"elbow_flex": math.nan, "wrist_flex": 5.0}, now_s=1 / 30, period_s=P30)
    assert result.sent == g.last_sent == ZERO  # nothing moves, not even the finite joints
    assert [(e.joint, e.kind) for e in result.events] == [("elbow_flex", Intervention.NON_FINITE)]
    result = g.filter(ZERO | {"shoulder_pan": math.inf}, now_s=2 / 30, period_s=P30)
    assert result.sent["shoulder_pan"] == 0.0


def test_goals_beyond_the_range_are_clamped():
    g = guard(max_step_deg=500, max_velocity_deg_s=1e5, max_gripper_step_percent=100)
    result = g.filter(ZERO | {"shoulder_lift": 170.0, "gripper": 120.0}, now_s=1 / 30, period_s=P30)
    assert result.sent["shoulder_lift"] == pytest.approx(1000 * 360 / 4095 - 2.0)
    assert result.sent["gripper"] == 99.0
    assert {(e.joint, e.kind) for e in result.events} == {
        ("shoulder_lift", Intervention.LIMIT),
        ("gripper", Intervention.LIMIT),
    }


def test_steps_are_capped_per_tick():
    g = guard(max_step_deg=5.0, max_velocity_deg_s=1e5)
    result = g.filter(ZERO | {"wrist_roll": 40.0}, now_s=1 / 30, period_s=P30)
    assert result.sent["wrist_roll"] == 5.0
    assert result.events[0].kind is Intervention.STEP
    assert g.filter(ZERO | {"wrist_roll": 40.0}, now_s=2 / 30, period_s=P30).sent["wrist_roll"] == 10.0


def test_speed_is_capped_over_time():
    g = guard(max_step_deg=90.0, max_velocity_deg_s=60.0)
    result = g.filter(ZERO | {"shoulder_pan": 30.0}, now_s=1 / 30, period_s=P30)  # 60 deg/s * 1/30 s = 2 degrees
    assert result.sent["shoulder_pan"] == pytest.approx(2.0)
    assert result.events[0].kind is Intervention.VELOCITY


def test_the_gripper_has_its_own_step_cap_and_no_speed_cap():
    g = guard(max_velocity_deg_s=1.0, max_gripper_step_percent=25.0)
    assert g.filter(ZERO | {"gripper": 70.0}, now_s=1 / 30, period_s=P30).sent["gripper"] == 70.0
    result = g.filter(ZERO | {"gripper": 10.0}, now_s=2 / 30, period_s=P30)
    assert result.sent["gripper"] == 45.0
    assert [e.kind for e in result.events] == [Intervention.STEP]


def test_a_long_pause_does_not_allow_a_jump():
    g = guard(max_step_deg=90.0, max_velocity_deg_s=60.0)
    result = g.filter(ZERO | {"shoulder_pan": 30.0}, now_s=100.0, period_s=P30)
    assert result.sent["shoulder_pan"] == pytest.approx(4.0)  # capped at two ticks' worth


def test_a_transition_ramps_to_a_far_goal_then_the_normal_caps_apply():
    g = guard(ramp_speed_deg_s=30.0)
    g.begin_transition("the policy takes charge")
    goal = ZERO | {"shoulder_lift": 60.0, "gripper": 80.0}
    sent, t = [], 0.0
    while g.in_transition:
        t += P30
        result = g.filter(goal, now_s=t, period_s=P30)
        sent.append(result.sent)
        assert len(sent) < 200, "the ramp never reached its goal"
    lift = [s["shoulder_lift"] for s in sent]
    assert max(abs(b - a) for a, b in zip([0.0, *lift], lift, strict=False)) <= 1.0 + 1e-9  # 30 deg/s at 30 Hz
    assert lift[-1] == 60.0  # reached, then the transition ends
    assert sent[-1]["gripper"] == 80.0
    assert 60 <= len(sent) <= 61  # 60 degrees at 1 degree a tick (the clock sums periods with rounding)
    assert {e.kind for e in g.filter(goal, now_s=t + P30, period_s=P30).events} == set()
    # After the transition a jump is capped by the normal caps again (300 deg/s: 10 degrees a tick, not 1).
    assert g.filter(ZERO, now_s=t + 2 * P30, period_s=P30).sent["shoulder_lift"] == pytest.approx(50.0)


def test_a_late_tick_does_not_make_a_bigger_ramp_step():
    g = guard(ramp_speed_deg_s=30.0)
    g.begin_transition("a hold ended")
    result = g.filter(ZERO | {"elbow_flex": -40.0}, now_s=0.5, period_s=P30)  # 15 periods late
    assert result.sent["elbow_flex"] == pytest.approx(-1.0)
    assert [e.kind for e in result.events] == [Intervention.RAMP]


def test_a_transition_follows_a_moving_goal_and_ends_once_it_catches_it():
    g = guard(ramp_speed_deg_s=30.0)
    g.begin_transition("a replay starts")
    t, target = 0.0, 20.0
    for _ in range(200):
        t += P30
        target -= 0.5  # the goal moves at 15 deg/s toward the arm: the ramp closes in at 45
        g.filter(ZERO | {"wrist_flex": target}, now_s=t, period_s=P30)
        if not g.in_transition:
            break
    assert not g.in_transition
    assert g.last_sent["wrist_flex"] == target


@pytest.mark.parametrize("fps", [30, 60, 120, 200])
def test_the_velocity_cap_holds_over_any_second_at_any_rate(fps):
    """A goal that keeps jumping: the displacement over every 1-second window stays within the cap."""
    config = {"max_step_deg": 90.0, "max_velocity_deg_s": 100.0}
    g = guard(**config)
    rng = np.random.default_rng(fps)
    period = 1 / fps
    times, positions, t = [], [], 0.0
    for _ in range(4 * fps):
        t += period * rng.uniform(0.5, 2.5)  # early, on time, and late ticks (a skipped deadline among them)
        goal = ZERO | {"shoulder_pan": 80.0 if int(t / 2.0) % 2 == 0 else -80.0}  # 160 degrees every 2 s
        times.append(t)
        positions.append(g.filter(goal, now_s=t, period_s=period).sent["shoulder_pan"])
    times_a, positions_a = np.array(times), np.array(positions)
    worst = 0.0
    for i, start in enumerate(times_a):
        window = positions_a[i : np.searchsorted(times_a, start + 1.0, side="right")]
        worst = max(worst, float(window.max() - window.min()))
    assert worst <= config["max_velocity_deg_s"] + 1e-6
    assert worst > 0.5 * config["max_velocity_deg_s"]  # the goal did push it: the cap, not the goal, bounded it


@pytest.mark.parametrize("fps", [60, 120, 200])
def test_above_30_hz_a_tick_moves_less_than_a_30_hz_tick(fps):
    g = guard(max_step_deg=90.0, max_velocity_deg_s=300.0)
    sent = g.filter(ZERO | {"shoulder_pan": 80.0}, now_s=1 / fps, period_s=1 / fps).sent["shoulder_pan"]
    assert sent == pytest.approx(300.0 / fps)


def test_a_new_guard_ramps_its_first_goals():
    cfg = SafetyConfig()
    limits = limits_from_calibration(RANGES, margin_deg=cfg.limit_margin_deg, gripper_margin_percent=1.0)
    g = ActionGuard("left_follower", limits, cfg, ZERO)
    assert g.in_transition  # the first source after connect is a change of source
    result = g.filter(ZERO | {"elbow_flex": 30.0}, now_s=P30, period_s=P30)
    assert result.sent["elbow_flex"] == pytest.approx(cfg.ramp_speed_deg_s * P30)


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
    ],
)
def test_bad_safety_settings_name_the_field(field, value, message):
    with pytest.raises(ConfigError, match=message):
        SafetyConfig(**{field: value})


def test_poll_misses_counts_every_miss_from_many_worker_threads():
    misses = PollMisses()
    per_thread = 1_000

    def timed_out() -> None:
        raise MotorTimeoutError("left_follower", "shoulder_pan", "no reply", "check the cable")

    def worker(arm: str) -> None:
        for _ in range(per_thread):
            assert misses.poll(arm, timed_out) is None  # one miss, then a reply resets the run
            misses.poll(arm, lambda: None)

    threads = [threading.Thread(target=worker, args=(f"arm{i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert misses.total == 8 * per_thread
    assert set(misses.in_a_row.values()) == {0}
