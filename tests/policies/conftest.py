"""Fixtures of the policy tests: tiny ACT and SmolVLA checkpoints, written once per session.

Both are saved exactly like `lerobot-train` checkpoints (config.json, model.safetensors, processor
files) for the rig the tests use: cameras left_wrist, right_wrist, overhead at 96x128 and the 12
bimanual joints (`policies.testing.tiny_policies.TEST_CAMERAS`, `robot.joints.BIMANUAL_KEYS`).
They are read-only: a test that needs to damage or change one copies it first
(`tests.support.checkpoints.copy_checkpoint`).
"""

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from policies.engine import PolicyInput
from policies.testing.tiny_policies import (
    TEST_CAMERAS,
    CameraShape,
    write_tiny_act,
    write_tiny_smolvla,
    write_tiny_vlm,
)
from robot.config import CalibrationConfig, RigConfig
from robot.rig import BimanualRig
from robot.virtual.config import TimingMode, VirtualRigConfig
from robot.virtual.inprocess import in_process_ports
from robot.virtual.precalibrated import write_calibration_files
from robot.virtual.rig_model import VirtualRigModel
from tests.support.checkpoints import TINY_ACT_CHUNK, TINY_SMOLVLA_CHUNK


@pytest.fixture(scope="session")
def tiny_vlm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny SmolVLM config + tokenizer directory (what `vlm_model_name` points at)."""
    return write_tiny_vlm(tmp_path_factory.mktemp("tiny_vlm") / "vlm")


@pytest.fixture(scope="session")
def tiny_act_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny ACT checkpoint: 3 cameras 96x128, 12 joints, chunk 10, random weights (seed 0)."""
    return write_tiny_act(tmp_path_factory.mktemp("tiny_act") / "checkpoint", chunk_size=TINY_ACT_CHUNK)


@pytest.fixture(scope="session")
def tiny_smolvla_dir(tmp_path_factory: pytest.TempPathFactory, tiny_vlm_dir: Path) -> Path:
    """A tiny SmolVLA checkpoint: 3 cameras 96x128, 12 joints, chunk 50, RTC off, random weights (seed 0)."""
    return write_tiny_smolvla(
        tmp_path_factory.mktemp("tiny_smolvla") / "checkpoint", vlm_dir=tiny_vlm_dir, chunk_size=TINY_SMOLVLA_CHUNK
    )


@pytest.fixture
def make_input() -> Callable[..., PolicyInput]:
    """`make(seed=0, cameras=TEST_CAMERAS, task=...)`: a PolicyInput with random joints and frames."""

    def make(seed: int = 0, cameras: Sequence[CameraShape] = TEST_CAMERAS, task: str = "Fold the cloth") -> PolicyInput:
        rng = np.random.default_rng(seed)
        state = np.concatenate([rng.normal(0, 20, 5), rng.uniform(0, 100, 1)] * 2).astype(np.float32)
        images = {name: rng.integers(0, 256, (height, width, 3), dtype=np.uint8) for name, height, width in cameras}
        return PolicyInput(state=state, images=images, task=task, time_s=0.0)

    return make


@pytest.fixture
def virtual_rig():
    """(make_rig(cameras=...), model): the in-process virtual rig with LeRobot calibration files."""
    model = VirtualRigModel(VirtualRigConfig(timing=TimingMode.INSTANT, calibrated=True, tremor_steps=0.0))
    root = Path(tempfile.mkdtemp()) / "calibration"
    write_calibration_files(model, root, "rig")
    with in_process_ports(model) as ports:

        def make(cameras: tuple = ()) -> BimanualRig:
            config = RigConfig(
                id="rig", calibration=CalibrationConfig(dir=root), cameras=cameras, virtual=VirtualRigConfig()
            )
            return BimanualRig(config, ports)

        yield make, model
