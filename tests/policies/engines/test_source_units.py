"""PolicySource without a rig: what the policy sees, the hold at an episode's start, reset, facts."""

import math

import numpy as np
import pytest

from policies.engines.sync import SyncEngine
from policies.source import PolicySource
from policies.testing.scripted_predictor import ScriptedPredictor
from robot.joints import Side
from tests.support.observations import observation, tick


def test_inputs_carry_state_in_bimanual_order_and_frames_by_camera_name():
    source = PolicySource(SyncEngine(ScriptedPredictor(chunk_size=4)), task="Push it aside")
    inputs = source.inputs(observation(cameras=("overhead", "left_wrist")))
    assert inputs.state.dtype == np.float32
    assert inputs.state.tolist() == [10, 11, 12, 13, 14, 15, 20, 21, 22, 23, 24, 25]
    assert set(inputs.images) == {"overhead", "left_wrist"}
    assert inputs.images["left_wrist"][0, 0, 0] == 1
    assert inputs.task == "Push it aside"
    assert inputs.time_s == 1.0
    assert source.inputs(observation()).images == {}


class Scripted:
    """An engine that serves what the test says, per tick."""

    def __init__(self, plan):
        self.plan = plan
        self.resets = 0

    def start(self):
        pass

    def next_action(self, inputs, tick_index):
        return self.plan[tick_index]

    def reset(self):
        self.resets += 1

    def stats(self):
        from policies.engine import EngineStats

        return EngineStats(0, 0, None, None, 3, 0.0)


def action(value: float, chunk_id: int = 0, index: int = 0):
    from policies.engine import EngineAction

    return EngineAction(np.full(12, value, dtype=np.float32), chunk_id, index, 0.25, 9)


def test_a_starved_first_tick_holds_the_followers_pose_then_the_last_goal():
    source = PolicySource(Scripted({0: None, 1: action(5.0), 2: None, 3: action(6.0, 1, 2)}))
    held = source.action(observation(), tick(0))
    assert held == observation().state()
    assert not source.has_acted
    assert source.facts() == {
        "chunk_id": -1.0,
        "index_in_chunk": -1.0,
        "chunk_latency_s": pytest.approx(math.nan, nan_ok=True),
        "queue_depth": 3.0,
        "starved": 1.0,
    }
    assert set(source.action(observation(offset=2.0), tick(1)).vector) == {5.0}
    assert source.has_acted
    assert set(source.action(observation(offset=4.0), tick(2)).vector) == {5.0}  # not the arms' new pose
    assert source.action(observation(), tick(3))[Side.RIGHT, "gripper"] == 6.0
    assert source.facts() == {
        "chunk_id": 1.0,
        "index_in_chunk": 2.0,
        "chunk_latency_s": 0.25,
        "queue_depth": 9.0,
        "starved": 0.0,
    }


def test_reset_starts_a_new_episode_holding_the_new_pose():
    engine = Scripted({0: action(5.0), 1: None})
    source = PolicySource(engine)
    source.action(observation(), tick(0))
    source.reset()
    assert engine.resets == 1
    assert not source.has_acted
    assert source.facts() == {}
    assert source.action(observation(offset=7.0), tick(1)) == observation(offset=7.0).state()


def test_prime_hands_the_first_observation_to_the_engine():
    predictor = ScriptedPredictor(chunk_size=4)
    engine = SyncEngine(predictor)
    source = PolicySource(engine)
    source.prime(observation(t_s=42.0))
    assert [call.time_s for call in predictor.calls] == [42.0]
    source.action(observation(), tick(0))
    assert engine.stats().blocked_s == 0.0


def test_taking_charge_and_resuming_after_starving_are_transitions_of_the_safety_layer():
    transitions: list[str] = []
    plan = {0: None, 1: action(5.0), 2: action(5.5), 3: None, 4: None, 5: action(6.0, 1, 0), 6: action(6.5, 1, 1)}
    source = PolicySource(Scripted(plan), on_transition=transitions.append)
    source.action(observation(), tick(0))
    assert transitions == []  # starved at the start: it holds the pose, no new source yet
    source.action(observation(), tick(1))
    assert transitions == ["the policy takes charge"]  # before the first action is returned
    for k in (2, 3, 4):
        source.action(observation(), tick(k))
    assert len(transitions) == 1  # a steady action and starved ticks (held) start nothing
    source.action(observation(), tick(5))
    assert transitions[-1] == "the policy resumes after 2 starved tick(s)"
    source.action(observation(), tick(6))
    assert len(transitions) == 2
    source.reset()
    source.engine.plan = {0: action(1.0)}
    source.action(observation(), tick(0))
    assert transitions[-1] == "the policy takes charge"  # every episode's first action
