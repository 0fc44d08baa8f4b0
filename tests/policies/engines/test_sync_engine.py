"""The synchronous baseline: LeRobot's chunk-by-chunk order, blocking counted."""

import numpy as np
import pytest

from policies.engines.sync import SyncEngine
from policies.testing.scripted_predictor import ScriptedPredictor
from policies.testing.tiny_policies import write_tiny_act
from tests.policies.engines import lerobot_reference
from tests.policies.engines.helpers import inputs_at


def test_chunks_are_executed_in_order_n_action_steps_at_a_time():
    predictor = ScriptedPredictor(chunk_size=10, latency_s=0.02)
    engine = SyncEngine(predictor, n_action_steps=4)
    served = [engine.next_action(inputs_at(tick), tick) for tick in range(10)]
    assert [(a.chunk_id, a.index_in_chunk) for a in served] == [
        (0, 0),
        (0, 1),
        (0, 2),
        (0, 3),
        (1, 0),
        (1, 1),
        (1, 2),
        (1, 3),
        (2, 0),
        (2, 1),
    ]
    assert [int(a.values[0]) for a in served] == [0, 1, 2, 3, 1000, 1001, 1002, 1003, 2000, 2001]
    assert [call.time_s for call in predictor.calls] == [0.0, 4.0, 8.0]  # computed from the tick that found it empty
    stats = engine.stats()
    assert stats.chunks == 3
    assert stats.starved_ticks == 0
    assert stats.blocked_s >= 3 * 0.02  # the loop waited for every chunk
    assert served[-1].queue_depth == 2


def test_prime_computes_the_first_chunk_outside_the_loop():
    engine = SyncEngine(ScriptedPredictor(chunk_size=5, latency_s=0.02))
    engine.prime(inputs_at(0))
    engine.next_action(inputs_at(0), 0)
    assert engine.stats().blocked_s == 0.0


@pytest.fixture(scope="module")
def act_checkpoint(tmp_path_factory):
    # n_action_steps 4 of 10: the truncation is part of what must match
    return write_tiny_act(tmp_path_factory.mktemp("sync") / "act", chunk_size=10, n_action_steps=4)


def test_sync_engine_equals_lerobots_select_action_tick_by_tick(act_checkpoint, make_input):
    ours = SyncEngine(lerobot_reference.predictor(act_checkpoint), n_action_steps=4)
    theirs = lerobot_reference.load(act_checkpoint)
    for tick in range(11):  # three chunk boundaries
        inputs = make_input(seed=tick)
        action = ours.next_action(inputs, tick)
        expected = lerobot_reference.lerobot_action(theirs, inputs)
        np.testing.assert_allclose(action.values, expected, rtol=1e-5, atol=1e-4)
        assert (action.chunk_id, action.index_in_chunk) == divmod(tick, 4)
