import numpy as np
import pytest

from evaluation.episode_source import EpisodeSignals
from evaluation.errors import ConfigError
from evaluation.judge.events import EventConfig, find_events, gripper_closed_intervals
from evaluation.judge.motion_check import MotionCheckConfig, check_motion
from evaluation.rubric import load_rubric
from evaluation.testing.synthetic_dataset import NAMES, Scenario, scripted_signals
from evaluation.vocabulary import HeuristicSignal, Phase
from robot.joints import Side

N = 300  # 10 s at 30 fps; scripted phases are fractions of the episode


def _signals(scenario: Scenario) -> EpisodeSignals:
    state, action = scripted_signals(scenario, N)
    return EpisodeSignals(state, action, NAMES, 30)


def _phases(scenario: Scenario) -> dict[Phase, list[int]]:
    out: dict[Phase, list[int]] = {}
    for e in find_events(_signals(scenario), EventConfig()).events:
        out.setdefault(e.phase, []).append(e.frame_index)
    return out


def test_fold_and_push_finds_grasp_lift_release_push_in_order():
    p = _phases(Scenario.FOLD_AND_PUSH)
    # The script ramps both gripper commands from 90 to 8 % over 25..30 % of the episode (crossing the 30 %
    # close threshold at 28.7 %), back to 90 over 50..55 % (crossing 50 % open at 52.6 %), pushes from 65 to 85 %.
    assert all(abs(f - 0.287 * N) <= 2 for f in p[Phase.GRASP])
    assert len(p[Phase.GRASP]) == 2
    assert all(abs(f - 0.526 * N) <= 2 for f in p[Phase.RELEASE])
    assert len(p[Phase.RELEASE]) == 2
    assert p[Phase.START] == [0]
    assert p[Phase.FINAL] == [N - 1]
    (push,) = p[Phase.PUSH]
    assert 0.64 * N <= push <= 0.70 * N
    assert max(p[Phase.GRASP]) < min(p[Phase.LIFT]) <= max(p[Phase.RELEASE]) < push < p[Phase.MOTION_END][0]


def test_no_push_without_sideways_motion_after_release():
    p = _phases(Scenario.FOLD_NO_PUSH)
    assert Phase.RELEASE in p
    assert Phase.PUSH not in p


def test_grasp_without_release_has_no_release_event():
    p = _phases(Scenario.GRASP_ONLY)
    assert len(p[Phase.GRASP]) == 2
    assert Phase.RELEASE not in p


def test_idle_episode_has_only_start_and_final():
    assert set(_phases(Scenario.IDLE)) == {Phase.START, Phase.FINAL}


def test_gripper_hysteresis_ignores_chatter_between_thresholds():
    signals = _signals(Scenario.IDLE)
    grip = NAMES.index("left_gripper.pos")
    action = signals.action.copy()
    action[:, grip] = 90.0
    action[100:110, grip] = 20.0  # closes
    action[110:120, grip] = 40.0  # between thresholds: still closed
    action[120:125, grip] = 25.0
    action[125:, grip] = 80.0  # opens at 125
    chattering = EpisodeSignals(signals.state, action, NAMES, 30)
    assert gripper_closed_intervals(chattering, Side.LEFT, EventConfig()) == [(100, 125)]


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        (Scenario.FOLD_AND_PUSH, {"grasp_with_motion": 1.0, "grasp_release_cycle": 1.0, "motion_after_release": 1.0}),
        (Scenario.FOLD_NO_PUSH, {"grasp_with_motion": 1.0, "grasp_release_cycle": 1.0, "motion_after_release": 0.0}),
        (Scenario.GRASP_ONLY, {"grasp_with_motion": 0.5, "grasp_release_cycle": 0.5, "motion_after_release": 0.0}),
        (Scenario.IDLE, {"grasp_with_motion": 0.0, "grasp_release_cycle": 0.0, "motion_after_release": 0.0}),
    ],
)
def test_motion_check_signals(scenario, expected):
    signals = _signals(scenario)
    check = check_motion(signals, find_events(signals, EventConfig()), MotionCheckConfig())
    assert check.to_dict()["signals"] == expected
    assert check.did_nothing == (scenario == Scenario.IDLE)
    assert all(a.moved for a in check.arms) == (scenario != Scenario.IDLE)


def test_heuristic_score_is_capped_by_the_rubric():
    signals = _signals(Scenario.FOLD_AND_PUSH)
    check = check_motion(signals, find_events(signals, EventConfig()), MotionCheckConfig())
    r1, r2, r3 = load_rubric().criteria
    assert check.signal(HeuristicSignal.GRASP_RELEASE_CYCLE) == 1.0
    assert (check.score(r1), check.score(r2), check.score(r3)) == (1.0, 0.5, 1.0)  # R2 caps at 0.5: no cloth seen


def test_idle_arms_report_no_path_despite_sensor_noise():
    signals = _signals(Scenario.IDLE)
    assert np.abs(np.diff(signals.state, axis=0)).max() > 0  # there is noise
    check = check_motion(signals, find_events(signals, EventConfig()), MotionCheckConfig())
    assert all(a.path_deg == 0.0 and a.moving_s == 0.0 for a in check.arms)


def test_event_config_validation_names_the_field():
    with pytest.raises(ConfigError, match="gripper_closed_below_pct"):
        EventConfig(gripper_closed_below_pct=60, gripper_open_above_pct=50)
    with pytest.raises(ConfigError, match="gripper_source"):
        EventConfig(gripper_source="vibes")
