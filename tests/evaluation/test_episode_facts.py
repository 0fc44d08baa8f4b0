"""An episode's own facts for the review pages: idle spans from the states, marks from the timing sidecar."""

from urllib.parse import parse_qsl

import numpy as np
import pytest

from evaluation.episode_facts import QualitySummary, _sidecar_marks, idle_spans
from evaluation.episode_source import EpisodeSignals
from evaluation.errors import ConfigError
from evaluation.review.filters import EpisodeFilter

NAMES = ("left_shoulder_pan.pos", "left_elbow_flex.pos", "left_gripper.pos")


def _signals(body: np.ndarray, gripper: np.ndarray, fps: int = 30) -> EpisodeSignals:
    state = np.stack([body, body / 2, gripper], axis=1).astype(np.float32)
    return EpisodeSignals(state=state, action=state, names=NAMES, fps=fps)


def test_idle_spans_are_the_runs_where_no_body_joint_moves():
    frames = np.arange(90)
    body = np.clip(frames - 30, 0, 30) * 0.5  # 15 deg/s from frame 30 to 60, still before and after
    gripper = np.sin(frames) * 40  # a busy gripper does not make an arm move
    assert idle_spans(_signals(body, gripper)) == [(0, 30), (61, 89)]


def test_a_pause_shorter_than_half_a_second_is_not_an_idle_span():
    frames = np.arange(60)
    body = np.minimum(frames, 20.0) + np.maximum(frames - 30, 0)  # 30 deg/s, a 10-frame pause, 30 deg/s
    assert idle_spans(_signals(body, np.zeros(60))) == []
    assert idle_spans(_signals(body, np.zeros(60)), min_span_s=0.3) == [(21, 30)]


def test_the_sidecar_marks_safety_changes_and_frames_after_lost_camera_frames():
    timing = {
        "frame_index": np.arange(6.0),
        "safety.changed_mask": np.array([0, 0, 0, 4096, 1, 0], dtype=float),
        "overhead.sequence": np.array([0, 1, 2, 4, 5, 8], dtype=float),  # 3 and 6-7 never arrived
        "left_wrist.sequence": np.array([0, 1, 2, 3, 4, 5], dtype=float),
    }
    assert _sidecar_marks(timing) == {"safety": [3, 4], "dropped": [3, 5]}


def test_a_card_reads_its_headline_numbers():
    card = {
        "achieved_fps": 29.9,
        "skew_p99_ms": None,
        "dropped_frames": {"overhead": 2, "left_wrist": 1},
        "idle_fraction": 0.25,
        "limit_hits": 3,
        "verdict": "keep (marked)",
        "failed_gates": ["overhead lost 2"],
    }
    quality = QualitySummary.from_card(card)
    assert (quality.dropped_frames, quality.skew_p99_ms, quality.verdict) == (3, None, "keep (marked)")
    assert quality.failed_gates == ("overhead lost 2",)


def test_the_quality_filters_round_trip_through_the_query_string():
    query = {"scored": "no", "verdict": "keep (marked)", "dropped": "1", "min_idle": "20"}
    flt = EpisodeFilter.from_query(query, ["R1"])
    assert (flt.scored, flt.verdict, flt.dropped, flt.min_idle_percent) == ("no", "keep (marked)", True, 20.0)
    again = EpisodeFilter.from_query(dict(parse_qsl(flt.query_string())), ["R1"])
    assert again.query_string() == flt.query_string()


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"min_idle": "lots"}, "min_idle='lots'"),
        ({"min_idle": "nan"}, "from 0 to 100"),
        ({"min_idle": "101"}, "from 0 to 100"),
        ({"verdict": "great"}, "allowed"),
        ({"scored": "maybe"}, "allowed"),
    ],
)
def test_a_bad_quality_filter_is_one_clear_error(query, message):
    with pytest.raises(ConfigError, match=message):
        EpisodeFilter.from_query(query, ["R1"])
