"""What a curation will hold, before anything is written: plans, trims proposed from the motion, filters."""

import numpy as np
import pytest

from robot.joints import BIMANUAL_KEYS
from teleop.commands.edit import _splits
from teleop.dataset.curate.card_filter import card_facts, parse_condition
from teleop.dataset.curate.errors import CurationError
from teleop.dataset.curate.plan import Span, plan_curation
from teleop.dataset.curate.trim_proposal import MARGIN_S, propose_trim
from teleop.dataset.sidecar import IDLE_SPEED_DEG_S

LENGTHS = [90, 120, 75, 80, 60]
NAMES = list(BIMANUAL_KEYS)
FPS = 30


def test_dropped_episodes_leave_the_rest_renumbered_in_order_and_trims_keep_their_span():
    curation = plan_curation(LENGTHS, drop=[1, 3], trims={2: Span(10, 60)})
    assert [(k.source_index, k.new_index, k.span.frames) for k in curation.kept] == [(0, 0, 90), (2, 1, 50), (4, 2, 60)]
    assert curation.dropped == (1, 3)
    assert curation.trims
    assert curation.frames == 90 + 50 + 60
    assert curation.mapping() == {0: 0, 2: 1, 4: 2}
    preview = "\n".join(curation.describe(FPS))
    assert "3 of 5 episodes kept, 200 frames (6.7 s at 30 fps)" in preview
    assert "dropped: episodes 1, 3" in preview
    assert "episode 2 -> 1: frames 10:60 of 75" in preview
    assert "renumbered: 2->1, 4->2" in preview


def test_a_plan_without_trims_cuts_whole_episodes_only():
    curation = plan_curation(LENGTHS, drop=[0])
    assert not curation.trims
    assert curation.describe(FPS)[1] == "dropped: episodes 0"


@pytest.mark.parametrize(
    ("drop", "trims", "words"),
    [
        ([5], {}, "the dataset has episodes 0-4"),
        ([], {7: Span(0, 10)}, "the dataset has episodes 0-4"),
        ([2], {2: Span(0, 10)}, "both dropped and trimmed"),
        ([], {0: Span(50, 40)}, "--trim=0:0:90"),
        ([], {0: Span(0, 91)}, "0 <= START < STOP <= 90"),
        ([0, 1, 2, 3, 4], {}, "every episode is dropped"),
    ],
)
def test_a_plan_that_cannot_be_is_refused_naming_the_option(drop, trims, words):
    with pytest.raises(CurationError, match=words.replace("(", r"\(")):
        plan_curation(LENGTHS, drop=drop, trims=trims)


def _states(still_head: int, moving: int, still_tail: int) -> np.ndarray:
    """Joint states: still, then the shoulder turning 30 deg/s, then still again."""
    frames = still_head + moving + still_tail
    states = np.zeros((frames, len(NAMES)), dtype=np.float32)
    column = NAMES.index("left_shoulder_pan.pos")
    ramp = np.concatenate([np.zeros(still_head), np.arange(1, moving + 1), np.full(still_tail, moving)])
    states[:, column] = ramp.astype(np.float32)
    return states


def test_the_proposed_trim_cuts_the_idle_head_and_tail_keeping_half_a_second_each_side():
    states = _states(still_head=60, moving=40, still_tail=50)
    span = propose_trim(states, NAMES, FPS)
    margin = round(MARGIN_S * FPS)
    assert span == (60 - margin, 60 + 40 + margin)


def test_a_gripper_moving_alone_is_idle_and_a_still_episode_is_kept_whole():
    states = _states(0, 0, 90)
    states[:, NAMES.index("right_gripper.pos")] = np.linspace(0, 80, 90)  # the grippers are not body joints
    assert propose_trim(states, NAMES, FPS) == (0, 90)


def test_motion_just_under_the_idle_speed_is_idle():
    states = _states(30, 30, 30)
    slow = IDLE_SPEED_DEG_S * 0.9 / FPS  # degrees per frame
    states[:, NAMES.index("left_elbow_flex.pos")] = np.arange(90) * slow
    span = propose_trim(states, NAMES, FPS)
    assert span == (30 - 15, 60 + 15)


def test_a_condition_reads_the_card_and_an_episode_without_one_fails_a_clause_on_it():
    condition = parse_condition("dropped_frames == 0 and idle_percent < 30 and verdict == keep")
    card = {"dropped_frames": {"overhead": 0, "left_wrist": 0}, "idle_fraction": 0.25, "verdict": "keep"}
    assert condition.needs_card
    assert condition.passes(card_facts(60, FPS, card))
    assert not condition.passes(card_facts(60, FPS, {**card, "idle_fraction": 0.31}))
    assert not condition.passes(card_facts(60, FPS, {**card, "dropped_frames": {"overhead": 2}}))
    assert not condition.passes(card_facts(60, FPS, {**card, "verdict": "rerecord"}))
    assert not condition.passes(card_facts(60, FPS, None))
    length = parse_condition("duration_s >= 2")
    assert not length.needs_card
    assert length.passes(card_facts(60, FPS, None))
    assert not length.passes(card_facts(59, FPS, None))


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("dropped == 0", "no field 'dropped'; the fields are frames, duration_s"),
        ("verdict < keep", "orders a word; use == or !="),
        ("idle_percent is low", "is not FIELD OP VALUE"),
        ("__import__('os') == 1", "is not FIELD OP VALUE"),
    ],
)
def test_a_condition_that_does_not_parse_is_refused_with_the_fields(text, words):
    with pytest.raises(CurationError, match=words.replace("(", r"\(")):
        parse_condition(text)


def test_splits_by_fraction_take_episodes_in_order_and_by_list_take_those():
    assert _splits(("train:0.8", "val:0.2"), 10) == {"train": list(range(8)), "val": [8, 9]}
    assert _splits(("train:0-2+5", "val:3"), 6) == {"train": [0, 1, 2, 5], "val": [3]}
