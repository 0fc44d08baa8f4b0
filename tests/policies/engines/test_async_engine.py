"""The asynchronous engine on a scripted predictor with injected latency, at 30 FPS."""

import os
import threading

import pytest

from policies.engines.async_engine import AsyncEngine
from policies.errors import InferenceError, NonFiniteActionError
from policies.testing.scripted_predictor import ScriptedPredictor
from robot.realtime import realtime_thread
from tests.policies.engines.helpers import drive, inputs_at


@pytest.fixture
def engines():
    made = []

    def make(predictor, **options):
        engine = AsyncEngine(predictor, fps=30.0, **options)
        made.append(engine)
        return engine

    yield make
    for engine in made:
        engine.close()


@pytest.mark.slow
def test_half_second_latency_chunk_50_never_starves_and_never_blocks(engines):
    predictor = ScriptedPredictor(chunk_size=50, latency_s=0.5)
    engine = engines(predictor)
    engine.prime(inputs_at(0))
    served = drive(engine, ticks=180)  # 6 s: about four refills
    stats = engine.stats()
    assert stats.starved_ticks == 0
    assert engine.warmup_ticks == 0
    assert all(s.action is not None for s in served)
    assert stats.chunks >= 4
    # The loop never waited on inference: every chunk was computed on the worker thread and the
    # engine never took its blocking path (how long each call took is the machine's, not asserted).
    assert {call.thread_name for call in predictor.calls} == {"async-inference"}
    assert stats.blocked_s == 0.0
    # The threshold came from the measured latency, which a 0.5 s sleep never undercuts:
    # ceil(0.5 s * 1.5 * 30) = 23 actions, and more.
    assert stats.latency_p50_s >= 0.5
    assert engine.refill_threshold() >= 23


def test_chunks_are_aligned_to_the_tick_their_observation_was_taken_at(engines):
    predictor = ScriptedPredictor(chunk_size=50, latency_s=0.2)
    engine = engines(predictor, blend_steps=0)  # no cross-fade: the values name chunk and index exactly
    engine.prime(inputs_at(0))
    served = drive(engine, ticks=120)
    assert engine.stats().starved_ticks == 0
    requested_at = {call.index: int(call.time_s) for call in predictor.calls[1:]}  # time_s is the tick
    first_served = {}
    for s in served:
        first_served.setdefault(s.action.chunk_id, s)
    for chunk_id, tick in requested_at.items():
        if chunk_id not in first_served:
            continue  # still in flight when the run ended
        first = first_served[chunk_id]
        # Every tick between the request and the arrival executed one action of the old chunk: the
        # new chunk starts that many actions in, at the action meant for this tick.
        assert first.action.index_in_chunk == first.tick - tick
        assert first.action.values[0] == pytest.approx(1000 * chunk_id + first.action.index_in_chunk)


def test_the_overlap_is_cross_faded_in_the_engine(engines):
    engine = engines(ScriptedPredictor(chunk_size=20), refill_threshold=6)
    engine.prime(inputs_at(0))
    served = []
    for tick in range(30):
        served.append(engine.next_action(inputs_at(tick), tick))
        assert engine.wait_for_chunk(5.0)  # the worker answers before the next tick
    # Tick 13 leaves 6 actions (14..19 of chunk 0): chunk 1 is asked for with tick 13's observation,
    # so its action i is for tick 13 + i. At tick 14 it is in: action 0 is past, 1.. overlap 14..19.
    assert [a.chunk_id for a in served[:14]] == [0] * 14
    for k in range(6):  # w = (k + 1) / 7 over the six overlapping ticks
        tick = 14 + k
        old, new = float(tick), 1000.0 + 1 + k
        weight = (k + 1) / 7
        assert served[tick].chunk_id == 1
        assert served[tick].index_in_chunk == 1 + k
        assert served[tick].values[0] == pytest.approx((1 - weight) * old + weight * new, rel=1e-6)
    assert served[20].values[0] == pytest.approx(1007.0)  # past the overlap: chunk 1 alone


@pytest.mark.slow
def test_latency_longer_than_a_chunk_counts_starved_ticks(engines):
    predictor = ScriptedPredictor(chunk_size=50, latency_s=2.5)
    engine = engines(predictor)
    engine.prime(inputs_at(0))
    assert engine.refill_threshold() == 0  # cannot be hidden: each chunk runs to its end
    served = drive(engine, ticks=150)  # 5 s: chunk 0 lasts 1.67 s, chunk 1 takes 2.5 s
    starved = [s for s in served if s.action is None]
    assert engine.stats().starved_ticks == len(starved) > 0
    assert engine.stats().blocked_s == 0.0
    # Chunk 1 was asked for on chunk 0's last tick; the arms then held, so nothing else moved into
    # the past: chunk 1 starts at its action 1 (action 0 was that last tick's).
    late = [s for s in served if s.action is not None and s.action.chunk_id == 1]
    assert late, "chunk 1 arrived within the run"
    assert late[0].action.index_in_chunk == 1
    assert served.index(late[0]) - served.index(starved[0]) == len(starved)  # one hold, then motion again


def test_first_ticks_without_prime_are_warm_up_not_starved(engines):
    predictor = ScriptedPredictor(chunk_size=50, latency_s=0.3)
    engine = engines(predictor)
    served = drive(engine, ticks=60)
    waiting = [s for s in served if s.action is None]
    assert 0 < len(waiting) < len(served)  # the ticks of the first 0.3 s call (how many is the machine's)
    assert engine.warmup_ticks == len(waiting)
    assert engine.stats().starved_ticks == 0
    assert all(s.action is not None for s in served[len(waiting) :])


def test_reset_drops_the_queue_and_a_chunk_in_flight(engines):
    predictor = ScriptedPredictor(chunk_size=10, latency_s=0.2)
    engine = engines(predictor)
    engine.prime(inputs_at(0))
    for tick in range(8):
        engine.next_action(inputs_at(tick), tick)  # threshold 5 -> chunk 1 in flight
    engine.reset()
    assert engine.stats().queue_depth == 0
    served = drive(engine, ticks=30)
    used = {s.action.chunk_id for s in served if s.action is not None}
    assert 1 not in used  # asked for before the reset: dropped
    assert predictor.resets == 1  # the predictor was reset on the worker before the next chunk


def test_a_failing_predictor_raises_on_the_control_thread(engines):
    engine = engines(ScriptedPredictor(chunk_size=10, fail_at_call=1))
    engine.prime(inputs_at(0))

    def drive() -> None:
        for tick in range(50):
            engine.next_action(inputs_at(tick), tick)
            engine.wait_for_chunk(5.0)

    with pytest.raises(InferenceError, match=r"chunk 1: RuntimeError: scripted failure"):
        drive()


def test_a_nan_chunk_raises_before_any_of_it_is_served(engines):
    engine = engines(ScriptedPredictor(chunk_size=10, nan_at_call=1, nan_index=9))
    engine.prime(inputs_at(0))
    served = []

    def drive() -> None:
        for tick in range(50):
            served.append(engine.next_action(inputs_at(tick), tick))
            engine.wait_for_chunk(5.0)

    with pytest.raises(NonFiniteActionError, match=r"chunk 1 .* action 9, left_shoulder_pan\.pos"):
        drive()
    assert {a.chunk_id for a in served if a is not None} == {0}


class SchedulingProbe(ScriptedPredictor):
    """Records the scheduling policy of the thread each chunk is computed on."""

    def __init__(self) -> None:
        super().__init__(chunk_size=10)
        self.policies: list[int] = []

    def predict_chunk(self, inputs, **options):
        self.policies.append(os.sched_getscheduler(0))
        return super().predict_chunk(inputs, **options)


def test_the_worker_started_from_a_real_time_loop_thread_runs_at_ordinary_priority(engines):
    probe = SchedulingProbe()
    engine = engines(probe)
    granted: list[bool] = []

    def loop_thread() -> None:  # what ControlLoop does: the engine starts on its first next_action
        with realtime_thread(10) as ok:
            granted.append(ok)
            engine.next_action(inputs_at(0), 0)
            engine.wait_for_chunk(5.0)

    thread = threading.Thread(target=loop_thread)
    thread.start()
    thread.join(10.0)
    if not granted[0]:
        pytest.skip("real-time scheduling is not permitted here (needs root or an rtprio limit)")
    assert probe.policies
    assert set(probe.policies) == {os.SCHED_OTHER}
