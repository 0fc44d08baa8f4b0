"""The report's measurements on hand-made signals: spikes, gripper events, deadline misses, policy seams."""

import numpy as np
import pytest

from policies.replay.analysis import Thresholds, gripper_events, motion_spikes
from robot.joints import BIMANUAL_KEYS

FPS = 30.0
ELBOW = BIMANUAL_KEYS.index("left_elbow_flex.pos")
GRIPPER = BIMANUAL_KEYS.index("right_gripper.pos")


def smooth(n: int = 90) -> np.ndarray:
    """A slow, smooth motion of every joint (well under every threshold), quantised like encoder steps."""
    t = np.arange(n) / FPS
    values = np.stack([20 * np.sin(0.8 * t + i) for i in range(len(BIMANUAL_KEYS))], axis=1)
    return np.round(values / 0.0879) * 0.0879


def test_a_smooth_quantised_motion_has_no_spikes():
    values = smooth()
    assert motion_spikes(values, np.arange(len(values)), FPS, Thresholds()) == []


def test_a_one_frame_outlier_is_named_by_its_first_frame_and_joint():
    values = smooth()
    values[40, ELBOW] += 25.0
    spikes = motion_spikes(values, np.arange(len(values)), FPS, Thresholds())
    assert {s.joint for s in spikes} == {"left_elbow_flex.pos"}
    by_quantity = {s.quantity: s for s in spikes}
    assert set(by_quantity) == {"velocity", "acceleration", "jerk"}
    velocity = by_quantity["velocity"]
    assert (velocity.first_frame, velocity.last_frame) == (40, 41)  # up into the outlier, then back down
    assert abs(velocity.peak) > 700  # 25 degrees in one frame at 30 fps
    assert min(s.first_frame for s in spikes) == 40


def test_frames_are_the_recorded_frame_numbers_not_tick_numbers():
    values = smooth(30)
    values[10, ELBOW] += 30.0
    frames = np.arange(30) + 100  # e.g. a replay that started later in the episode
    spikes = motion_spikes(values, frames, FPS, Thresholds())
    assert min(s.first_frame for s in spikes) == 110


def test_gripper_closes_and_opens_are_events_and_jitter_is_not():
    n = 120
    values = np.zeros((n, len(BIMANUAL_KEYS)))
    gripper = np.full(n, 80.0)
    gripper[20:40] = np.linspace(80, 10, 20)  # a close
    gripper[40:70] = 10.0
    gripper[70:90] = np.linspace(10, 60, 20)  # an open
    gripper[90:] = 60.0
    gripper += np.where(np.arange(n) % 2, 0.3, -0.3)  # encoder jitter
    values[:, GRIPPER] = gripper
    values[:, BIMANUAL_KEYS.index("left_gripper.pos")] = 50.0 + np.where(np.arange(n) % 2, 0.4, 0.0)
    events = gripper_events(values, np.arange(n), min_change=10.0)
    assert [(e.joint, e.kind) for e in events] == [("right_gripper.pos", "close"), ("right_gripper.pos", "open")]
    close, opening = events
    assert 18 <= close.first_frame <= 21
    assert 38 <= close.last_frame <= 41
    assert close.from_percent == pytest.approx(80, abs=1)
    assert close.to_percent == pytest.approx(10, abs=1)
    assert 68 <= opening.first_frame <= 71
    assert opening.to_percent == pytest.approx(60, abs=1)
