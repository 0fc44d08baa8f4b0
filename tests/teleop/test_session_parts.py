"""Keys, the gripper gesture and quality cards, each on its own."""

import numpy as np
import pytest

from robot.joint_values import JointValues
from robot.joints import GRIPPER, Side
from teleop.gesture import GestureConfig, GestureDetector
from teleop.keys import Key, parse
from teleop.quality import EpisodeLog, GateAction, QualityGates, quality_card


def test_keys_from_terminal_bytes():
    assert parse(b"\x1b[C") == [Key.NEXT]
    assert parse(b"\x1b[D") == [Key.RERECORD]
    assert parse(b"\x1bOC") == [Key.NEXT]  # application cursor mode
    assert parse(b"nrpqe ") == [Key.NEXT, Key.RERECORD, Key.PAUSE, Key.STOP, Key.ESTOP, Key.PAUSE]
    assert parse(b"\x1b") == [Key.STOP]  # Esc alone
    assert parse(b"\x1b[A\x1b[Bx") == []  # up, down and unknown keys do nothing
    assert parse(b"N") == [Key.NEXT]


def pose(left_gripper: float, right_gripper: float, lift: float = 0.0) -> JointValues:
    zero = JointValues(np.zeros((2, 6)))
    both = zero.with_joint(Side.LEFT, GRIPPER, left_gripper).with_joint(Side.RIGHT, GRIPPER, right_gripper)
    return both.with_joint(Side.LEFT, "shoulder_lift", lift)


def run_detector(detector, poses_by_time):
    return [t for t, p in poses_by_time if detector.update(p, t)]


def test_gesture_fires_once_after_a_still_squeeze_of_both_grippers():
    detector = GestureDetector(GestureConfig(hold_s=1.0))
    timeline = [(i / 30, pose(2.0, 3.0)) for i in range(90)]
    fired = run_detector(detector, timeline)
    assert len(fired) == 1
    assert fired[0] == pytest.approx(1.0, abs=0.05)
    # Held on: no second firing until both open again...
    again = [(3 + i / 30, pose(2.0, 3.0)) for i in range(60)]
    assert run_detector(detector, again) == []
    opened = [(6 + i / 30, pose(50.0, 50.0)) for i in range(10)]
    squeezed = [(7 + i / 30, pose(2.0, 2.0)) for i in range(40)]
    assert len(run_detector(detector, opened + squeezed)) == 1  # ...then it counts again


def test_gesture_ignores_one_gripper_and_a_moving_grasp():
    detector = GestureDetector(GestureConfig(hold_s=1.0))
    one_hand = [(i / 30, pose(2.0, 60.0)) for i in range(60)]
    assert run_detector(detector, one_hand) == []
    moving = [(2 + i / 30, pose(2.0, 2.0, lift=i * 1.5)) for i in range(60)]  # 45 deg/s: a bimanual grasp
    assert run_detector(detector, moving) == []


def test_gesture_can_be_off():
    detector = GestureDetector(GestureConfig(enabled=False))
    assert run_detector(detector, [(i / 30, pose(0.0, 0.0)) for i in range(90)]) == []


def log(periods_s, skews_s=(), dropped=None, writer_dropped=0):
    starts, t = [], 0.0
    for p in periods_s:
        starts.append(t)
        t += p
    entry = EpisodeLog(starts_s=starts, skews_s=list(skews_s), dropped=dropped or {}, writer_dropped=writer_dropped)
    entry.moving = [True] * (len(starts) - 1)
    return entry


def test_a_good_episode_is_kept():
    card = quality_card(3, log([1 / 30] * 300, skews_s=[0.01] * 300), 30, QualityGates())
    assert card.verdict == "keep"
    assert card.failed_gates == ()
    assert card.frames == 300
    assert card.achieved_fps == pytest.approx(30.0, abs=0.01)


def test_slow_loop_and_lost_frames_fail_the_gates_with_the_exact_counts():
    periods = [1 / 30] * 200 + [1 / 20] * 100
    card = quality_card(4, log(periods, dropped={"overhead": 7}, writer_dropped=2), 30, QualityGates())
    assert card.verdict == "rerecord"
    assert any("loop rate" in g for g in card.failed_gates)
    assert "overhead lost 7 frame(s)" in card.failed_gates
    assert any("writer fell behind and lost 2" in g for g in card.failed_gates)
    kept = quality_card(4, log(periods), 30, QualityGates(on_fail=GateAction.KEEP))
    assert kept.verdict == "keep (marked)"
