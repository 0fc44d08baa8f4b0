"""Loading checkpoints: round trips of the tiny ACT and SmolVLA, hub ids offline, damaged files, devices."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from policies.checkpoint import CheckpointSource, load_policy, read_checkpoint
from policies.contract import RigSpec, check_contract
from policies.device import select_device
from policies.errors import CheckpointError, DeviceError
from policies.predictor import LeRobotPredictor
from policies.testing.tiny_policies import TEST_CAMERAS, build_tiny_act, build_tiny_smolvla, save_checkpoint
from tests.policies.conftest import copy_checkpoint

RIG = RigSpec(cameras={name: (height, width) for name, height, width in TEST_CAMERAS})
REAL_VLM = "HuggingFaceTB/SmolVLM2-500M-Video-Instruct"


def lerobot_chunk(tiny, inputs) -> np.ndarray:
    """LeRobot's own path for one chunk, on the in-memory policy (the reference)."""
    from lerobot.policies import prepare_observation_for_inference

    observation = {"observation.state": inputs.state.copy()}
    observation.update({f"observation.images.{name}": image.copy() for name, image in inputs.images.items()})
    with torch.inference_mode():
        batch = prepare_observation_for_inference(observation, torch.device("cpu"), inputs.task, "bi_so_follower")
        actions = tiny.postprocessor(tiny.policy.predict_action_chunk(tiny.preprocessor(batch)))
    return actions[0].numpy()


def predictor_for(directory: Path, **source) -> LeRobotPredictor:
    checkpoint = read_checkpoint(CheckpointSource(str(directory), **source))
    return LeRobotPredictor(load_policy(checkpoint, "cpu"), check_contract(checkpoint.features, RIG))


@pytest.mark.parametrize("kind", ["act", "smolvla"])
def test_a_saved_checkpoint_predicts_what_the_in_memory_policy_predicts(kind, tmp_path, tiny_vlm_dir, make_input):
    tiny = build_tiny_act(seed=3) if kind == "act" else build_tiny_smolvla(tiny_vlm_dir, chunk_size=20, seed=3)
    directory = save_checkpoint(tiny, tmp_path / kind)
    assert {"config.json", "model.safetensors", "policy_preprocessor.json", "policy_postprocessor.json"} <= {
        path.name for path in directory.iterdir()
    }
    predictor = predictor_for(directory)
    inputs = make_input(seed=1)

    torch.manual_seed(7)  # SmolVLA samples flow-matching noise; ACT ignores the seed at inference
    expected = lerobot_chunk(tiny, inputs)
    torch.manual_seed(7)
    chunk = predictor.predict_chunk(inputs)

    assert chunk.dtype == np.float32
    assert chunk.shape == (predictor.chunk_size, 12) == expected.shape
    np.testing.assert_allclose(chunk, expected, rtol=1e-5, atol=1e-4)
    other = predictor.predict_chunk(make_input(seed=2))
    assert not np.allclose(other, chunk), "the chunk must depend on the observation"


def test_read_checkpoint_reports_features_and_chunking(tiny_act_dir, tiny_smolvla_dir):
    act = read_checkpoint(str(tiny_act_dir)).features
    smolvla = read_checkpoint(str(tiny_smolvla_dir)).features
    assert (act.policy_type, act.chunk_size, act.state_size, act.action_size) == ("act", 10, 12, 12)
    assert act.cameras == {f"observation.images.{name}": (96, 128) for name, _, _ in TEST_CAMERAS}
    assert act.image_resize is None
    assert (smolvla.policy_type, smolvla.chunk_size, smolvla.rtc_enabled) == ("smolvla", 50, False)
    assert smolvla.image_resize == (64, 64)


def test_a_fresh_process_reads_and_loads_a_checkpoint(tiny_smolvla_dir):
    """What so101-deploy does first: nothing LeRobot-related imported beforehand."""
    code = (
        "import sys; from policies.checkpoint import load_policy, read_checkpoint;"
        "loaded = load_policy(read_checkpoint(sys.argv[1]), 'cpu'); print(loaded.checkpoint.features.policy_type)"
    )
    done = subprocess.run([sys.executable, "-c", code, str(tiny_smolvla_dir)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "smolvla"


def test_the_training_run_folder_above_pretrained_model_is_accepted(tmp_path, tiny_act_dir):
    run = tmp_path / "checkpoints" / "last"
    copy_checkpoint(tiny_act_dir, run / "pretrained_model")
    assert read_checkpoint(str(run)).directory == run / "pretrained_model"


def test_a_hub_id_offline_without_a_cached_copy_says_to_download_it():
    with pytest.raises(CheckpointError, match="offline") as caught:
        read_checkpoint("lerobot/act_so101_fold")
    assert "hf download lerobot/act_so101_fold" in str(caught.value)


def test_an_unreachable_hub_fails_fast_with_the_next_step(monkeypatch):
    import socket

    import huggingface_hub
    from huggingface_hub import constants

    with socket.socket() as closed:  # a loopback port nobody listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setattr(huggingface_hub, "is_offline_mode", lambda: False)
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{port}")
    with pytest.raises(CheckpointError, match="cannot be reached") as caught:
        read_checkpoint("lerobot/act_so101_fold")
    assert "--local-dir" in str(caught.value)


def test_a_missing_directory_is_named(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist"):
        read_checkpoint(str(tmp_path / "nowhere"))
    (tmp_path / "model.safetensors").write_bytes(b"x")
    with pytest.raises(CheckpointError, match="is a file"):
        read_checkpoint(str(tmp_path / "model.safetensors"))


@pytest.mark.parametrize(
    "name",
    [
        "config.json",
        "model.safetensors",
        "policy_preprocessor.json",
        "policy_postprocessor.json",
        "policy_postprocessor_step_0_unnormalizer_processor.safetensors",
    ],
)
def test_a_missing_file_is_named_before_anything_loads(name, tmp_path, tiny_act_dir):
    directory = copy_checkpoint(tiny_act_dir, tmp_path / "act")
    (directory / name).unlink()
    with pytest.raises(CheckpointError, match=name.replace(".", r"\.")):
        read_checkpoint(str(directory))


def test_a_corrupt_or_foreign_config_is_named(tmp_path, tiny_act_dir):
    directory = copy_checkpoint(tiny_act_dir, tmp_path / "act")
    config = directory / "config.json"
    original = json.loads(config.read_text())
    config.write_text("{not json")
    with pytest.raises(CheckpointError, match=re.escape("config.json is not valid JSON")):
        read_checkpoint(str(directory))
    config.write_text(json.dumps({**original, "type": "diffusion"}))
    with pytest.raises(CheckpointError, match="'diffusion' is not supported"):
        read_checkpoint(str(directory))
    config.write_text(json.dumps({**original, "chunk_size": "many"}))
    with pytest.raises(CheckpointError, match=re.escape("config.json cannot be parsed")):
        read_checkpoint(str(directory))


def test_damaged_weights_are_named_when_they_load(tmp_path, tiny_act_dir):
    directory = copy_checkpoint(tiny_act_dir, tmp_path / "act")
    weights = directory / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:4096])  # a copy cut short
    checkpoint = read_checkpoint(str(directory))  # config and processors are fine
    with pytest.raises(CheckpointError, match=r"model\.safetensors cannot be loaded into the act model"):
        load_policy(checkpoint, "cpu")


def test_weights_of_another_model_are_refused(tmp_path, tiny_act_dir, tiny_smolvla_dir):
    directory = copy_checkpoint(tiny_act_dir, tmp_path / "act")
    shutil.copy(tiny_smolvla_dir / "model.safetensors", directory / "model.safetensors")
    with pytest.raises(CheckpointError, match=re.escape("does not match config.json")):
        load_policy(read_checkpoint(str(directory)), "cpu")


def test_damaged_processor_state_is_named(tmp_path, tiny_act_dir):
    directory = copy_checkpoint(tiny_act_dir, tmp_path / "act")
    (directory / "policy_preprocessor_step_3_normalizer_processor.safetensors").write_bytes(b"\x00" * 64)
    with pytest.raises(CheckpointError, match="processors"):
        load_policy(read_checkpoint(str(directory)), "cpu")


def _with_hub_vlm(source: Path, destination: Path) -> Path:
    """A SmolVLA checkpoint as fine-tuned from lerobot/smolvla_base: its VLM named by hub id."""
    directory = copy_checkpoint(source, destination)
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps({**config, "vlm_model_name": REAL_VLM}))
    pre = json.loads((directory / "policy_preprocessor.json").read_text())
    for step in pre["steps"]:
        if step["registry_name"] == "tokenizer_processor":
            step["config"]["tokenizer_name"] = REAL_VLM
    (directory / "policy_preprocessor.json").write_text(json.dumps(pre))
    return directory


def test_smolvla_with_a_hub_vlm_offline_asks_for_a_local_copy(tmp_path, tiny_smolvla_dir):
    directory = _with_hub_vlm(tiny_smolvla_dir, tmp_path / "smolvla")
    with pytest.raises(CheckpointError, match="vlm_model_name=<dir>") as caught:
        read_checkpoint(str(directory))
    assert REAL_VLM in str(caught.value)


def test_smolvla_vlm_override_loads_the_local_copy(tmp_path, tiny_smolvla_dir, tiny_vlm_dir, make_input):
    directory = _with_hub_vlm(tiny_smolvla_dir, tmp_path / "smolvla")
    predictor = predictor_for(directory, vlm_model_name=str(tiny_vlm_dir))
    reference = predictor_for(tiny_smolvla_dir)
    torch.manual_seed(0)
    chunk = predictor.predict_chunk(make_input())
    torch.manual_seed(0)
    np.testing.assert_allclose(chunk, reference.predict_chunk(make_input()), rtol=1e-5, atol=1e-4)


def test_smolvla_vlm_override_must_hold_the_tokenizer(tmp_path, tiny_smolvla_dir):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CheckpointError, match=re.escape("lacks config.json, tokenizer_config.json")):
        read_checkpoint(CheckpointSource(str(tiny_smolvla_dir), vlm_model_name=str(empty)))


def test_a_vlm_path_from_another_machine_is_named(tmp_path, tiny_smolvla_dir):
    directory = copy_checkpoint(tiny_smolvla_dir, tmp_path / "smolvla")
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps({**config, "vlm_model_name": "/home/trainer/vlm"}))
    with pytest.raises(CheckpointError, match="'/home/trainer/vlm' is not a directory on this machine"):
        read_checkpoint(str(directory))


def test_auto_picks_what_is_available(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert select_device("auto") == torch.device("cpu")
    assert select_device("CPU") == torch.device("cpu")
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert select_device("auto") == torch.device("mps")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert select_device("auto") == torch.device("cuda")


def test_an_unavailable_or_unknown_device_is_an_error(monkeypatch, tiny_act_dir):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    with pytest.raises(DeviceError, match="'cuda' was asked for"):
        select_device("cuda")
    with pytest.raises(DeviceError, match="no Apple Metal"):
        select_device("mps")
    with pytest.raises(DeviceError, match="'tpu' is not known"):
        select_device("tpu")
    with pytest.raises(DeviceError, match="'cuda:0' was asked for"):
        load_policy(read_checkpoint(str(tiny_act_dir)), "cuda:0")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_the_tiny_act_runs_on_cuda_like_on_cpu(tiny_act_dir, make_input):
    checkpoint = read_checkpoint(str(tiny_act_dir))
    on_gpu = LeRobotPredictor(load_policy(checkpoint, "cuda"), check_contract(checkpoint.features, RIG))
    on_cpu = predictor_for(tiny_act_dir)
    np.testing.assert_allclose(on_gpu.predict_chunk(make_input()), on_cpu.predict_chunk(make_input()), atol=1e-2)
