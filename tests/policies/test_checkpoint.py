"""Loading checkpoints: round trips of the tiny ACT and SmolVLA, hub ids refused, damaged files, devices,
and loading runs no code a checkpoint names (processor steps by class, pickle weights)."""

import json
import pickle
import re
import shutil
import subprocess
import sys
from contextlib import suppress
from pathlib import Path

import numpy as np
import pytest
import torch

from policies.checkpoint import CheckpointSource, load_policy, read_checkpoint
from policies.contract import RigSpec, check_contract
from policies.device import select_device
from policies.errors import CheckpointError, DeviceError
from policies.predictor import LeRobotPredictor
from policies.processor_allowlist import trusted_names
from policies.testing.sentinel_step import RECORD_CALL, RECORDING_STEP, RecordingStep, record_call
from policies.testing.tiny_policies import TEST_CAMERAS, build_tiny_act, build_tiny_smolvla, save_checkpoint
from tests.support.checkpoints import copy_checkpoint

RIG = RigSpec(cameras={name: (height, width) for name, height, width in TEST_CAMERAS})
REAL_VLM = "HuggingFaceTB/SmolVLM2-500M-Video-Instruct"
PRE, POST = "policy_preprocessor.json", "policy_postprocessor.json"


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


@pytest.mark.slow
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


def test_a_hub_id_is_refused_with_the_download_command_without_contacting_the_hub(monkeypatch):
    import socket

    import huggingface_hub
    from huggingface_hub import constants

    with socket.socket() as closed:  # a loopback port nobody listens on: any contact would fail differently
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setattr(huggingface_hub, "is_offline_mode", lambda: False)
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{port}")
    with pytest.raises(CheckpointError, match="is not a local directory") as caught:
        read_checkpoint("lerobot/act_so101_fold")
    message = str(caught.value)
    assert "hf download lerobot/act_so101_fold --local-dir " in message
    assert "\n" not in message
    with pytest.raises(
        CheckpointError, match=re.escape("hf download lerobot/act_so101_fold --revision v2 --local-dir")
    ):
        read_checkpoint(CheckpointSource("lerobot/act_so101_fold", revision="v2"))


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


# --- loading runs no code the checkpoint names ------------------------------------------------------


def add_step(directory: Path, file_name: str, step: dict) -> int:
    """Append `step` to a processor file of a copied checkpoint; returns its index."""
    path = directory / file_name
    spec = json.loads(path.read_text())
    spec["steps"].append(step)
    path.write_text(json.dumps(spec))
    return len(spec["steps"]) - 1


def sentinel(target: str, record: Path) -> dict:
    return {"class": target, "config": {"record_path": str(record)}}


def test_lerobot_on_its_own_calls_a_class_a_processor_file_names(tmp_path, tiny_act_dir):
    """The threat, and proof the sentinel works: LeRobot imports and calls it while loading."""
    from lerobot.processor import PolicyProcessorPipeline

    directory = copy_checkpoint(tiny_act_dir, tmp_path / "act")
    record = tmp_path / "ran.txt"
    add_step(directory, PRE, sentinel(RECORD_CALL, record))
    with suppress(Exception):  # what LeRobot does with the None it got back does not matter here
        PolicyProcessorPipeline.from_pretrained(str(directory), config_filename=PRE)
    assert record.read_text().splitlines() == ["record_call"]


@pytest.mark.parametrize("target", [RECORDING_STEP, RECORD_CALL])
@pytest.mark.parametrize("file_name", [PRE, POST])
def test_a_processor_step_given_by_class_is_refused_before_it_is_called(target, file_name, tmp_path, tiny_act_dir):
    directory = copy_checkpoint(tiny_act_dir, tmp_path / "act")
    record = tmp_path / "ran.txt"
    index = add_step(directory, file_name, sentinel(target, record))
    with pytest.raises(CheckpointError) as caught:
        read_checkpoint(str(directory))
    message = str(caught.value)
    assert message.startswith(f"{directory / file_name}: step {index} names class {target!r}")
    assert f"--policy.trust_processor_classes={target}" in message
    assert "\n" not in message
    assert not record.exists(), "the sentinel ran"


def test_a_processor_file_changed_after_it_was_read_is_refused_at_load(tmp_path, tiny_act_dir):
    directory = copy_checkpoint(tiny_act_dir, tmp_path / "act")
    checkpoint = read_checkpoint(str(directory))
    record = tmp_path / "ran.txt"
    add_step(directory, POST, sentinel(RECORDING_STEP, record))
    with pytest.raises(CheckpointError, match=re.escape(f"{directory / POST}: step 2 names class")):
        load_policy(checkpoint, "cpu")
    assert not record.exists(), "the sentinel ran"


@pytest.mark.parametrize("name", ["pi0_new_line_processor", "no_such_step"])
def test_a_registry_name_outside_the_allow_list_is_refused(name, tmp_path, tiny_act_dir):
    """pi0_new_line_processor is registered in LeRobot: the list is ours, not whatever is registered."""
    directory = copy_checkpoint(tiny_act_dir, tmp_path / "act")
    index = add_step(directory, PRE, {"registry_name": name, "config": {}})
    with pytest.raises(CheckpointError, match=re.escape(f"step {index} names registry_name {name!r}")) as caught:
        read_checkpoint(str(directory))
    assert f"--policy.trust_processor_classes={name}" in str(caught.value)
    trusted = read_checkpoint(CheckpointSource(str(directory), trust_processor_classes=(name,)))
    assert trusted.features.policy_type == "act"


def test_an_explicitly_trusted_class_loads_and_runs(tmp_path, tiny_act_dir, make_input):
    directory = copy_checkpoint(tiny_act_dir, tmp_path / "act")
    record = tmp_path / "ran.txt"
    add_step(directory, PRE, sentinel(RECORDING_STEP, record))
    checkpoint = read_checkpoint(CheckpointSource(str(directory), trust_processor_classes=(RECORDING_STEP,)))
    assert not record.exists(), "reading the files must not build the step"
    loaded = load_policy(checkpoint, "cpu")
    assert record.read_text().splitlines() == ["RecordingStep"]
    assert isinstance(loaded.preprocessor.steps[-1], RecordingStep)
    chunk = LeRobotPredictor(loaded, check_contract(checkpoint.features, RIG)).predict_chunk(make_input())
    np.testing.assert_allclose(chunk, predictor_for(tiny_act_dir).predict_chunk(make_input()), rtol=1e-6)


def test_the_trust_option_is_a_comma_separated_list():
    assert trusted_names("") == ()
    assert trusted_names(" my_pkg.steps.Crop, other.Step ,,") == ("my_pkg.steps.Crop", "other.Step")


def test_so101_deploy_refuses_an_untrusted_step_and_passes_a_trusted_one(tmp_path, tiny_act_dir, capsys):
    from rich.console import Console

    from policies.commands.deploy import DeployConfig, check_checkpoint, load_predictor, main
    from robot.cli import parse_command
    from tests.support.record_runs import rig_file

    directory = copy_checkpoint(tiny_act_dir, tmp_path / "act")
    record = tmp_path / "ran.txt"
    add_step(directory, PRE, sentinel(RECORDING_STEP, record))
    args = [
        f"--config_path={rig_file(tmp_path)}",
        f"--policy.path={directory}",
        "--policy.device=cpu",
        "--record=false",
    ]
    assert main(args) == 1
    output = capsys.readouterr()
    assert f"--policy.trust_processor_classes={RECORDING_STEP}" in output.out + output.err
    assert not record.exists(), "the sentinel ran"

    config = parse_command(DeployConfig, [*args, f"--policy.trust_processor_classes={RECORDING_STEP}"])
    checked = check_checkpoint(config, Console(file=sys.stderr))
    assert checked is not None
    assert checked.checkpoint.source.trust_processor_classes == (RECORDING_STEP,)
    load_predictor(config, checked, Console(file=sys.stderr))
    assert record.read_text().splitlines() == ["RecordingStep"]


def test_so101_replay_passes_the_trust_option(tmp_path, tiny_act_dir):
    from policies.engines.config import EngineConfig, EngineKind
    from policies.replay.policy import open_policy
    from policies.runner import PolicyOptions

    sync = EngineConfig(kind=EngineKind.SYNC)

    directory = copy_checkpoint(tiny_act_dir, tmp_path / "act")
    record = tmp_path / "ran.txt"
    add_step(directory, PRE, sentinel(RECORDING_STEP, record))
    with pytest.raises(CheckpointError, match="names class"):
        open_policy(PolicyOptions(path=str(directory), device="cpu"), sync, RIG.cameras, fps=30.0, realtime=False)
    options = PolicyOptions(path=str(directory), device="cpu", trust_processor_classes=RECORDING_STEP)
    open_policy(options, sync, RIG.cameras, fps=30.0, realtime=False).close()
    assert record.read_text().splitlines() == ["RecordingStep"]


def test_a_state_file_outside_the_checkpoint_is_refused(tmp_path, tiny_act_dir):
    directory = copy_checkpoint(tiny_act_dir, tmp_path / "act")
    spec = json.loads((directory / POST).read_text())
    spec["steps"][0]["state_file"] = "../elsewhere.safetensors"
    (directory / POST).write_text(json.dumps(spec))
    with pytest.raises(CheckpointError, match=re.escape("state_file '../elsewhere.safetensors'")):
        read_checkpoint(str(directory))


class _RunsWhenUnpickled:
    """What a hostile pickle holds: unpickling it calls record_call."""

    def __init__(self, record: Path) -> None:
        self.record = record

    def __reduce__(self):
        return record_call, (str(self.record),)


def test_pickle_weights_are_refused_and_never_read(tmp_path, tiny_act_dir):
    record = tmp_path / "ran.txt"
    hostile = pickle.dumps(_RunsWhenUnpickled(record))
    with suppress(Exception):
        pickle.loads(hostile)
    assert record.exists(), "the hostile pickle must be able to run"
    record.unlink()

    directory = copy_checkpoint(tiny_act_dir, tmp_path / "act")
    (directory / "model.safetensors").unlink()
    (directory / "pytorch_model.bin").write_bytes(hostile)
    with pytest.raises(CheckpointError, match=r"holds weights only as pytorch_model\.bin") as caught:
        read_checkpoint(str(directory))
    assert "safetensors" in str(caught.value)
    assert "st.save_file(torch.load(" in str(caught.value)

    beside = copy_checkpoint(tiny_act_dir, tmp_path / "act_with_bin")
    (beside / "pytorch_model.bin").write_bytes(hostile)
    load_policy(read_checkpoint(str(beside)), "cpu")  # weights come from model.safetensors
    assert not record.exists(), "a pickle file was read"


def test_a_smolvla_whose_vlm_weights_are_pickle_is_refused(tmp_path, tiny_smolvla_dir, tiny_vlm_dir):
    directory = copy_checkpoint(tiny_smolvla_dir, tmp_path / "smolvla")
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps({**config, "load_vlm_weights": True}))
    vlm = copy_checkpoint(tiny_vlm_dir, tmp_path / "vlm")
    (vlm / "pytorch_model.bin").write_bytes(b"pickle")
    with pytest.raises(CheckpointError, match=r"load_vlm_weights=true\) holds weights only as pytorch_model\.bin"):
        read_checkpoint(CheckpointSource(str(directory), vlm_model_name=str(vlm)))


def test_act_loads_without_fetching_torchvision_backbone_weights(tmp_path, tiny_act_dir, make_input, monkeypatch):
    """lerobot-train's ACT names ImageNet ResNet weights; model.safetensors holds them, so nothing is fetched."""
    directory = copy_checkpoint(tiny_act_dir, tmp_path / "act")
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(
        json.dumps({**config, "pretrained_backbone_weights": "ResNet18_Weights.IMAGENET1K_V1"})
    )
    import torchvision.models._api

    fetched = []

    def fetch(url: str, *args, **kwargs):  # torchvision's download-and-torch.load of the weights
        fetched.append(url)
        raise OSError(f"the test refuses to fetch {url}")

    monkeypatch.setattr(torchvision.models._api, "load_state_dict_from_url", fetch)
    torch_home = tmp_path / "torch_home"
    torch_home.mkdir()
    monkeypatch.setenv("TORCH_HOME", str(torch_home))
    chunk = predictor_for(directory).predict_chunk(make_input())
    assert fetched == []
    assert list(torch_home.iterdir()) == []
    np.testing.assert_allclose(chunk, predictor_for(tiny_act_dir).predict_chunk(make_input()), rtol=1e-6)
