"""A dataset's joint units from its own evidence: LeRobot's percent-of-range clamps, or the degree grid."""

import numpy as np
import pytest

from robot.joint_units import STEP_DEG, JointUnits, detect_units, resolve_units

NAMES = ("shoulder_pan.pos", "shoulder_lift.pos", "elbow_flex.pos", "wrist_flex.pos", "wrist_roll.pos", "gripper.pos")
RNG = np.random.default_rng(7)


def _degrees(frames: int, span_steps: int = 900) -> np.ndarray:
    """Follower readings as LeRobot converts them: (raw - mid) x 360/4095, mid on a half step."""
    raw = RNG.integers(2048 - span_steps, 2048 + span_steps, size=(frames, len(NAMES)))
    values = ((raw - 2047.5) * STEP_DEG).astype(np.float32)
    values[:, -1] = RNG.uniform(0, 100, frames)  # the gripper: 0..100 either way
    return values


def _percent(frames: int, clamped_share: float) -> np.ndarray:
    values = RNG.uniform(-95, 95, size=(frames, len(NAMES))).astype(np.float32)
    clamped = RNG.random(frames) < clamped_share
    values[clamped, 1] = 100.0  # the range clamp on shoulder_lift
    values[:, -1] = RNG.uniform(0, 100, frames)
    return values


def test_follower_readings_in_degrees_are_on_the_servo_grid():
    verdict = detect_units(_degrees(300, span_steps=1000), NAMES)
    assert verdict.units == "degrees"
    assert "degree grid" in verdict.evidence


def test_small_motions_in_degrees_within_100_are_still_degrees():
    values = _degrees(300, span_steps=400)  # +/-35 degrees: inside +/-100, so only the grid tells
    assert np.abs(values[:, :-1]).max() < 100
    assert detect_units(values, NAMES).units == "degrees"


def test_degrees_past_100_need_no_grid():
    values = _degrees(50) + 0.013  # off the grid (a policy's actions), but wrist_roll reaches 150
    values[10, 4] = 150.0
    verdict = detect_units(values, NAMES)
    assert (verdict.units, verdict.evidence) == ("degrees", "body joints reach 150.0, past the +/-100 of percent units")


def test_percent_of_range_is_told_by_its_clamps_at_exactly_100():
    verdict = detect_units(_percent(1492, clamped_share=0.3), NAMES)
    assert verdict.units == "percent"
    assert "frames hold a body joint at exactly +/-100" in verdict.evidence


def test_percent_without_clamps_is_told_by_being_off_the_grid():
    assert detect_units(_percent(400, clamped_share=0.0), NAMES).units == "percent"


def test_degrees_that_reach_exactly_100_on_the_grid_are_still_degrees():
    # 100 degrees is 1137.5 steps: with the range middle on a half step (2047.5) a reading of raw
    # 3185 is exactly 100.0. A loaded machine's demo recording reached it and was read as percent.
    values = _degrees(90)
    values[13, 3] = np.float32((3185 - 2047.5) * STEP_DEG)
    values[15, 1] = np.float32((910 - 2047.5) * STEP_DEG)
    assert sorted(np.abs(values[[13, 15], [3, 1]]).tolist()) == [100.0, 100.0]
    verdict = detect_units(values, NAMES)
    assert (verdict.units, "degree grid" in verdict.evidence) == ("degrees", True)


def test_a_gripper_at_100_is_no_evidence():
    values = _degrees(200)
    values[:, -1] = 100.0  # fully open: 100 in both conventions
    assert detect_units(values, NAMES).units == "degrees"


def test_stated_units_win_and_say_so():
    verdict = resolve_units(JointUnits.DEGREES, _percent(100, 0.3), NAMES)
    assert (verdict.units, verdict.stated) == ("degrees", True)
    assert verdict.describe() == "degrees (stated with --dataset.units)"


@pytest.mark.parametrize("values", [np.full((5, 6), np.nan), np.zeros((0, 6))])
def test_nothing_to_judge_by_is_unknown(values):
    assert detect_units(values, NAMES).units == "unknown"
