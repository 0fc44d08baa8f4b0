"""Real-time chunking: the delay and the leftover reach the model; the queue is replaced, not blended."""

import math

import numpy as np
import pytest

from policies.engines.rtc import RTCEngine
from policies.testing.scripted_predictor import ScriptedPredictor
from policies.testing.tiny_policies import write_tiny_smolvla
from tests.policies.engines import lerobot_reference
from tests.policies.engines.helpers import inputs_at


def test_scripted_rtc_passes_the_leftover_and_the_delay_and_replaces_the_queue():
    predictor = ScriptedPredictor(chunk_size=20, latency_s=0.1)
    engine = RTCEngine(predictor, fps=30, refill_threshold=8)
    try:
        engine.prime(inputs_at(0))
        served = []
        for tick in range(16):
            served.append(engine.next_action(inputs_at(tick), tick))
            assert engine.wait_for_chunk(5.0)
        first, second = predictor.calls[0], predictor.calls[1]
        assert first.leftover is None
        assert first.inference_delay == 0
        # Asked for at tick 11 with 8 actions left (12..19 of chunk 0), with LeRobot's delay:
        # ceil(max latency so far * fps) = ceil(~0.1 s * 30).
        assert second.time_s == 11.0
        np.testing.assert_array_equal(second.leftover[:, 0], np.arange(12, 20, dtype=np.float32))
        assert second.inference_delay == math.ceil(served[0].chunk_latency_s * 30) >= 3
        # Tick 12 takes chunk 1 from its action 1 on, as it is: no cross-fade with chunk 0.
        assert (served[12].chunk_id, served[12].index_in_chunk) == (1, 1)
        assert served[12].values[0] == pytest.approx(1001.0)
    finally:
        engine.close()


@pytest.fixture(scope="module")
def rtc_smolvla(tmp_path_factory, tiny_vlm_dir):
    directory = write_tiny_smolvla(
        tmp_path_factory.mktemp("rtc") / "smolvla", vlm_dir=tiny_vlm_dir, chunk_size=50, rtc=True
    )
    return lerobot_reference.predictor(directory)


def test_tiny_smolvla_with_rtc_runs_finite_and_uses_the_leftover(rtc_smolvla, make_input, monkeypatch):
    assert rtc_smolvla.rtc_enabled
    policy = rtc_smolvla._loaded.policy
    seen = []
    original = policy.predict_action_chunk

    def spy(batch, **options):
        seen.append(options)
        return original(batch, **options)

    monkeypatch.setattr(policy, "predict_action_chunk", spy)
    guided = []
    processor = policy.rtc_processor
    original_denoise = processor.denoise_step

    def denoise_spy(x_t, prev_chunk_left_over, inference_delay, *args, **kwargs):
        guided.append(prev_chunk_left_over is not None)
        return original_denoise(x_t, prev_chunk_left_over, inference_delay, *args, **kwargs)

    monkeypatch.setattr(processor, "denoise_step", denoise_spy)
    engine = RTCEngine(rtc_smolvla, fps=30, refill_threshold=40)
    try:
        engine.prime(make_input(seed=0))
        actions = []
        for tick in range(45):  # chunk 1 is asked for at tick 9 and arrives within a few ticks
            action = engine.next_action(make_input(seed=tick), tick)
            if action is not None:
                actions.append(action)
            engine.wait_for_chunk(30.0)
    finally:
        engine.close()
    assert len(seen) >= 2
    assert all(np.isfinite(a.values).all() for a in actions)
    assert {a.chunk_id for a in actions} >= {0, 1}
    first, later = seen[0], seen[1]
    assert first["prev_chunk_left_over"] is None  # nothing queued before the first chunk
    assert later["prev_chunk_left_over"] is not None
    assert later["prev_chunk_left_over"].shape[-1] == 12
    assert later["inference_delay"] >= 1  # ceil(measured latency * 30)
    assert any(guided)  # LeRobot's RTCProcessor guided the denoiser towards the leftover
