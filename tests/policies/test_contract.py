"""The contract check: every difference named, raised before weights load, and the rename map."""

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import safetensors.torch

from policies.checkpoint import load_policy, read_checkpoint
from policies.contract import RigSpec, check_contract, parse_rename_map
from policies.errors import CheckpointError, ContractError
from policies.predictor import LeRobotPredictor
from policies.testing.tiny_policies import SINGLE_ARM_KEYS, TEST_CAMERAS, write_tiny_act, write_tiny_smolvla
from robot.cli import parse_command
from robot.config import RigConfig
from robot.joints import BIMANUAL_KEYS
from tests.support.checkpoints import copy_checkpoint

RIG = RigSpec(cameras={name: (height, width) for name, height, width in TEST_CAMERAS})


def features(directory: Path):
    return read_checkpoint(str(directory)).features


def refuse_weight_loads(monkeypatch) -> list[str]:
    """Any attempt to read a .safetensors file fails the test (and is recorded)."""
    opened: list[str] = []

    def refuse(*args, **kwargs):
        opened.append(str(args[:2]))
        raise AssertionError(f"weights were read: {args[:2]}")

    monkeypatch.setattr(safetensors.torch, "load_model", refuse)
    monkeypatch.setattr(safetensors.torch, "load_file", refuse)
    return opened


def test_the_tiny_checkpoints_fit_the_test_rig(tiny_act_dir, tiny_smolvla_dir):
    for directory in (tiny_act_dir, tiny_smolvla_dir):
        contract = check_contract(features(directory), RIG)
        assert contract.camera_keys == {name: f"observation.images.{name}" for name, _, _ in TEST_CAMERAS}
        assert contract.state_index == contract.action_index == tuple(range(12))


@dataclass(frozen=True)
class _RigOnly:
    rig: RigConfig = field(default_factory=RigConfig)


def test_the_rig_spec_comes_from_the_rig_config():
    config = parse_command(_RigOnly, ["--config_path=hardware_configs/virtual.yaml"])
    spec = RigSpec.from_rig_config(config.rig)
    assert spec.cameras == {"left_wrist": (480, 640), "right_wrist": (480, 640), "overhead": (480, 640)}
    assert spec.joint_names == BIMANUAL_KEYS


def test_a_missing_camera_is_named_with_a_rename_hint(tiny_act_dir):
    rig = RigSpec(cameras={"left_wrist": (96, 128), "right_wrist": (96, 128), "top": (96, 128)})
    with pytest.raises(ContractError) as caught:
        check_contract(features(tiny_act_dir), rig)
    message = str(caught.value)
    assert "checkpoint expects camera 'overhead' 96x128; no rig camera feeds it" in message
    assert "top 96x128" in message
    assert """--policy.rename_map='{"top": "overhead"}'""" in message


def test_a_camera_the_rig_lacks_entirely_is_named(tiny_act_dir):
    rig = RigSpec(cameras={"left_wrist": (96, 128), "right_wrist": (96, 128)})
    with pytest.raises(ContractError, match="expects camera 'overhead' 96x128; no rig camera feeds it"):
        check_contract(features(tiny_act_dir), rig)


def test_a_wrong_image_size_is_an_error_for_act(tiny_act_dir):
    rig = RigSpec(cameras={**RIG.cameras, "overhead": (480, 640)})
    with pytest.raises(ContractError) as caught:
        check_contract(features(tiny_act_dir), rig)
    message = str(caught.value)
    assert "checkpoint expects camera 'overhead' 96x128; the rig's 'overhead' gives 480x640" in message
    assert "set the camera to 96x128" in message
    assert "left_wrist" not in message  # only what differs


def test_smolvla_accepts_the_trained_aspect_ratio_and_refuses_another(tiny_smolvla_dir):
    scaled = RigSpec(cameras={**RIG.cameras, "overhead": (480, 640)})  # 96x128 * 5: same 3:4 ratio
    contract = check_contract(features(tiny_smolvla_dir), scaled)
    assert any("same aspect ratio" in note and "64x64" in note for note in contract.notes)
    wide = RigSpec(cameras={**RIG.cameras, "overhead": (360, 640)})
    with pytest.raises(ContractError, match="another aspect ratio"):
        check_contract(features(tiny_smolvla_dir), wide)


def test_a_single_arm_checkpoint_is_refused_before_weights_load(tmp_path, monkeypatch):
    directory = write_tiny_act(tmp_path / "single_arm", joint_names=SINGLE_ARM_KEYS)
    opened = refuse_weight_loads(monkeypatch)
    with pytest.raises(ContractError) as caught:
        check_contract(features(directory), RIG)
    message = str(caught.value)
    assert "observation.state has 6 values; the rig has 12" in message
    assert "action has 6 values" in message
    assert "single-arm checkpoint cannot drive a bimanual rig" in message
    assert opened == []


def test_contract_errors_come_before_any_weights_load(tmp_path, tiny_act_dir, monkeypatch):
    directory = copy_checkpoint(tiny_act_dir, tmp_path / "act")
    (directory / "model.safetensors").write_bytes(b"not weights at all")
    rig = RigSpec(cameras={"left_wrist": (96, 128), "right_wrist": (96, 128), "overhead": (480, 640)})
    opened = refuse_weight_loads(monkeypatch)
    with pytest.raises(ContractError, match="480x640"):
        check_contract(read_checkpoint(str(directory)).features, rig)
    assert opened == []
    monkeypatch.undo()
    with pytest.raises(CheckpointError, match=re.escape("model.safetensors")):  # loading would have failed
        load_policy(read_checkpoint(str(directory)), "cpu")


def test_every_difference_is_listed_at_once(tmp_path):
    directory = write_tiny_act(
        tmp_path / "other", joint_names=SINGLE_ARM_KEYS, cameras=(("top", 224, 224), ("wrist", 96, 128))
    )
    with pytest.raises(ContractError) as caught:
        check_contract(features(directory), RIG)
    problems = [line for line in str(caught.value).splitlines() if line.startswith("  - ")]
    assert len(problems) == 5, problems  # 2 cameras, the rename hint, state, action
    assert any("'top' 224x224" in line for line in problems)
    assert any("'wrist' 96x128" in line for line in problems)


def test_the_rename_map_feeds_renamed_cameras(tiny_act_dir, make_input):
    rig_names = {"left_wrist": "cam_left", "right_wrist": "cam_right", "overhead": "top"}
    rig = RigSpec(cameras={rig_names[name]: size for name, size in RIG.cameras.items()})
    with pytest.raises(ContractError):
        check_contract(features(tiny_act_dir), rig)
    rename = parse_rename_map(json.dumps({new: old for old, new in rig_names.items()}))
    contract = check_contract(features(tiny_act_dir), rig, rename)
    assert contract.camera_keys["top"] == "observation.images.overhead"

    loaded = load_policy(read_checkpoint(str(tiny_act_dir)), "cpu")
    renamed = LeRobotPredictor(loaded, contract)
    plain = LeRobotPredictor(loaded, check_contract(features(tiny_act_dir), RIG))
    inputs = make_input(seed=4)
    renamed_inputs = type(inputs)(
        state=inputs.state,
        images={rig_names[name]: image for name, image in inputs.images.items()},
        task=inputs.task,
        time_s=inputs.time_s,
    )
    np.testing.assert_array_equal(renamed.predict_chunk(renamed_inputs), plain.predict_chunk(inputs))


def test_rename_map_mistakes_are_named(tiny_act_dir):
    checkpoint = features(tiny_act_dir)
    with pytest.raises(ContractError, match="rename_map names rig camera 'front'"):
        check_contract(checkpoint, RIG, parse_rename_map('{"front": "overhead"}'))
    with pytest.raises(ContractError, match="maps 'overhead' to 'top', which the checkpoint does not take"):
        check_contract(checkpoint, RIG, parse_rename_map("{overhead: top}"))
    with pytest.raises(ContractError, match=re.escape("rig cameras ['left_wrist', 'overhead'] all map to")):
        check_contract(checkpoint, RIG, parse_rename_map({"left_wrist": "observation.images.overhead"}))
    with pytest.raises(ContractError, match="not a mapping"):
        parse_rename_map("[overhead, top]")
    with pytest.raises(ContractError, match="not a mapping"):
        parse_rename_map("{overhead: [")
    assert parse_rename_map(None) == parse_rename_map("") == {}
    assert parse_rename_map("{observation.images.top: overhead}") == {"top": "observation.images.overhead"}


def test_an_unused_rig_camera_is_a_note(tmp_path):
    directory = write_tiny_act(tmp_path / "two_cams", cameras=TEST_CAMERAS[:2])
    contract = check_contract(features(directory), RIG)
    assert "overhead" not in contract.camera_keys
    assert any("['overhead'] are not used" in note for note in contract.notes)


def _with_training_dataset(directory: Path, names: list[str], single_arm: bool = False) -> Path:
    """Give a checkpoint a train_config.json naming a local dataset with these joint names (as lerobot-train)."""
    root = directory.parent / "dataset"
    (root / "meta").mkdir(parents=True)
    joints = {"dtype": "float32", "shape": [len(names)], "names": names}
    info = {"features": {"observation.state": joints, "action": joints}}
    (root / "meta" / "info.json").write_text(json.dumps(info))
    (directory / "train_config.json").write_text(json.dumps({"dataset": {"repo_id": "me/fold", "root": str(root)}}))
    return directory


def test_recorded_joint_names_reorder_state_and_actions(tmp_path, tiny_act_dir, make_input):
    reordered = list(reversed(BIMANUAL_KEYS))
    directory = _with_training_dataset(copy_checkpoint(tiny_act_dir, tmp_path / "act"), reordered)
    named = read_checkpoint(str(directory)).features
    assert named.action_names == tuple(reordered)
    contract = check_contract(named, RIG)
    assert contract.state_index == tuple(reversed(range(12)))

    by_names = LeRobotPredictor(load_policy(read_checkpoint(str(directory)), "cpu"), contract)
    plain = LeRobotPredictor(
        load_policy(read_checkpoint(str(tiny_act_dir)), "cpu"), check_contract(features(tiny_act_dir), RIG)
    )
    inputs = make_input(seed=5)
    flipped = type(inputs)(state=inputs.state[::-1].copy(), images=inputs.images, task=inputs.task, time_s=0.0)
    # The model reads the state in its own (reversed) order and its action columns are reversed joints.
    np.testing.assert_allclose(by_names.predict_chunk(inputs), plain.predict_chunk(flipped)[:, ::-1], atol=1e-5)


def test_recorded_joint_names_that_differ_from_the_rig_are_named(tmp_path, tiny_act_dir):
    names = [name.replace("left_", "upper_") for name in BIMANUAL_KEYS]
    directory = _with_training_dataset(copy_checkpoint(tiny_act_dir, tmp_path / "act"), names)
    with pytest.raises(ContractError, match=re.escape("unknown ['upper_shoulder_pan.pos'")):
        check_contract(features(directory), RIG)


def test_a_single_arm_smolvla_is_refused_too(tmp_path, tiny_vlm_dir):
    directory = write_tiny_smolvla(tmp_path / "single", vlm_dir=tiny_vlm_dir, joint_names=SINGLE_ARM_KEYS)
    with pytest.raises(ContractError, match="single-arm"):
        check_contract(features(directory), RIG)
