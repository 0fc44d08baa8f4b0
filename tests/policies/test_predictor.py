"""LeRobotPredictor: chunks in rig order and units, NaN never passes, RTC arguments reach SmolVLA."""

import numpy as np
import pytest
import safetensors.torch
import torch

from policies.checkpoint import load_policy, read_checkpoint
from policies.contract import RigSpec, check_contract
from policies.engine import PolicyInput
from policies.errors import InferenceError, NonFiniteActionError
from policies.predictor import LeRobotPredictor, default_num_threads
from policies.testing.tiny_policies import TEST_CAMERAS, write_tiny_smolvla
from tests.support.checkpoints import copy_checkpoint

RIG = RigSpec(cameras={name: (height, width) for name, height, width in TEST_CAMERAS})
UNNORMALIZER = "policy_postprocessor_step_0_unnormalizer_processor.safetensors"


def predictor_for(directory, **options) -> LeRobotPredictor:
    checkpoint = read_checkpoint(str(directory))
    return LeRobotPredictor(load_policy(checkpoint, "cpu"), check_contract(checkpoint.features, RIG), **options)


@pytest.fixture(scope="module")
def act(tiny_act_dir) -> LeRobotPredictor:
    return predictor_for(tiny_act_dir)


@pytest.fixture(scope="module")
def rtc_smolvla_dir(tmp_path_factory, tiny_vlm_dir):
    return write_tiny_smolvla(tmp_path_factory.mktemp("rtc") / "smolvla", vlm_dir=tiny_vlm_dir, chunk_size=20, rtc=True)


def test_a_chunk_is_float32_in_rig_order_and_units(act, make_input):
    chunk = act.predict_chunk(make_input())
    assert (act.chunk_size, act.n_action_steps) == (10, 10)
    assert chunk.shape == (10, 12)
    assert chunk.dtype == np.float32
    assert np.isfinite(chunk).all()
    # Unnormalized with the checkpoint's stats (body joints std 30 deg): degrees, not unit-scale numbers.
    assert np.abs(chunk).max() > 3.0


def test_act_is_deterministic_and_reset_keeps_it_so(act, make_input):
    first = act.predict_chunk(make_input(seed=9))
    act.reset()
    np.testing.assert_array_equal(act.predict_chunk(make_input(seed=9)), first)


def test_nan_from_the_policy_never_leaves_the_predictor(tmp_path, tiny_act_dir, make_input):
    directory = copy_checkpoint(tiny_act_dir, tmp_path / "act")
    stats = safetensors.torch.load_file(directory / UNNORMALIZER)
    stats["action.std"][3] = float("nan")  # damaged statistics: wrist_flex of the left arm
    safetensors.torch.save_file(stats, directory / UNNORMALIZER)
    predictor = predictor_for(directory)
    with pytest.raises(NonFiniteActionError, match=r"joints \['left_wrist_flex.pos'\]"):
        predictor.predict_chunk(make_input())


def test_a_missing_frame_or_a_wrong_state_is_an_inference_error(act, make_input):
    inputs = make_input()
    without = PolicyInput(state=inputs.state, images={"left_wrist": inputs.images["left_wrist"]}, task="t", time_s=0)
    with pytest.raises(InferenceError, match="camera 'right_wrist' gave no frame"):
        act.predict_chunk(without)
    with pytest.raises(InferenceError, match=r"state has shape \(6,\)"):
        act.predict_chunk(PolicyInput(state=inputs.state[:6], images=inputs.images, task="t", time_s=0))


def test_a_failing_policy_becomes_an_inference_error(act, make_input):
    inputs = make_input()
    four_channels = {name: np.zeros((96, 128, 4), np.uint8) for name in inputs.images}
    with pytest.raises(InferenceError, match="the act policy failed on cpu"):
        act.predict_chunk(PolicyInput(state=inputs.state, images=four_channels, task="t", time_s=0))


def test_rtc_passes_the_delay_and_the_leftover_in_model_space(rtc_smolvla_dir, make_input, monkeypatch):
    predictor = predictor_for(rtc_smolvla_dir)
    assert predictor.rtc_enabled
    policy = predictor._loaded.policy
    seen: list[dict] = []
    real = policy.predict_action_chunk

    def spy(batch, **options):
        seen.append(options)
        actions = real(batch, **options)
        seen[-1]["raw"] = actions.clone()
        return actions

    monkeypatch.setattr(policy, "predict_action_chunk", spy)
    inputs = make_input()
    torch.manual_seed(0)
    first = predictor.predict_chunk(inputs)
    assert seen[0]["inference_delay"] == 0
    assert seen[0]["prev_chunk_left_over"] is None

    torch.manual_seed(0)
    guided = predictor.predict_chunk(inputs, inference_delay=3, leftover=first[5:])
    assert seen[1]["inference_delay"] == 3
    leftover = seen[1]["prev_chunk_left_over"]
    # What LeRobot's RTC engine passes: the previous chunk's unexecuted actions before post-processing.
    np.testing.assert_allclose(leftover.numpy(), seen[0]["raw"][0, 5:].numpy(), atol=1e-4)
    assert not np.allclose(guided, first), "the leftover must guide the new chunk"


def test_without_rtc_the_leftover_is_ignored(tiny_smolvla_dir, make_input):
    predictor = predictor_for(tiny_smolvla_dir)
    assert not predictor.rtc_enabled
    torch.manual_seed(0)
    plain = predictor.predict_chunk(make_input())
    torch.manual_seed(0)
    np.testing.assert_array_equal(predictor.predict_chunk(make_input(), inference_delay=4, leftover=plain[10:]), plain)


def test_threads_follow_the_machine(tiny_act_dir, monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert default_num_threads() == 2
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    assert default_num_threads() == 7
    before = torch.get_num_threads()
    try:
        predictor_for(tiny_act_dir, num_threads=1)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
