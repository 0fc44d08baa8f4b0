"""A checkpoint trained on data whose state blocks were swapped is refused by the contract, before weights load.

Its normalizer keeps the training data's per-joint statistics: each arm's state statistics match
its own arm's action statistics, or, after the swap, the other arm's. The statistics here are those
of the two-arm recording the review's data-bug checks read (tests/support/two_arm_recording.py),
clean and with the state's left and right blocks exchanged.
"""

from pathlib import Path

import numpy as np
import pytest

from policies.checkpoint import read_checkpoint
from policies.contract import RigSpec, check_contract
from policies.errors import ContractError
from policies.state_sides import read_joint_statistics, side_distances
from policies.testing.tiny_policies import TEST_CAMERAS
from robot.joints import BIMANUAL_KEYS, Side
from tests.support.checkpoints import copy_checkpoint
from tests.support.dataset_corruptions import side_swap_order
from tests.support.two_arm_recording import EPISODES, follower_states, leader_actions

RIG = RigSpec(cameras={name: (height, width) for name, height, width in TEST_CAMERAS})


def _recording() -> tuple[np.ndarray, np.ndarray]:
    """(state, action) of every frame of the two-arm recording, as lerobot-train computes its statistics from."""
    actions = [leader_actions(episode) for episode in range(EPISODES)]
    states = [follower_states(action) for action in actions]
    return np.concatenate(states).astype(np.float64), np.concatenate(actions).astype(np.float64)


def _trained_on(tiny_act_dir: Path, directory: Path, state: np.ndarray, action: np.ndarray) -> Path:
    """A copy of the tiny checkpoint whose normalizers hold these data's statistics (as lerobot-train writes them)."""
    from safetensors.numpy import load_file, save_file

    directory = copy_checkpoint(tiny_act_dir, directory)
    for path in directory.glob("policy_*.safetensors"):
        stats = load_file(str(path))
        for key, data in (("observation.state", state), ("action", action)):
            values = {"mean": data.mean(0), "std": data.std(0), "min": data.min(0), "max": data.max(0)}
            for name, value in values.items():
                if f"{key}.{name}" in stats:
                    stats[f"{key}.{name}"] = value.astype(np.float32)
        save_file(stats, str(path))
    return directory


def test_a_checkpoint_trained_on_the_clean_recording_fits(tiny_act_dir, tmp_path):
    state, action = _recording()
    directory = _trained_on(tiny_act_dir, tmp_path / "clean", state, action)
    distances = side_distances(read_joint_statistics(directory), BIMANUAL_KEYS, BIMANUAL_KEYS)
    assert distances[Side.LEFT, Side.LEFT] < distances[Side.LEFT, Side.RIGHT]
    assert distances[Side.RIGHT, Side.RIGHT] < distances[Side.RIGHT, Side.LEFT]
    check_contract(read_checkpoint(str(directory)).features, RIG)  # no ContractError


def test_a_checkpoint_trained_on_swapped_state_blocks_is_refused(tiny_act_dir, tmp_path):
    state, action = _recording()
    swapped = state[:, side_swap_order(list(BIMANUAL_KEYS))]
    directory = _trained_on(tiny_act_dir, tmp_path / "swapped", swapped, action)
    (directory / "model.safetensors").write_bytes(b"not weights at all")  # refused before they would load
    with pytest.raises(ContractError) as caught:
        check_contract(read_checkpoint(str(directory)).features, RIG)
    problems = [line for line in str(caught.value).splitlines() if line.startswith("  - ")]
    assert len(problems) == 1, problems
    assert "left and right state blocks were swapped" in problems[0]
    assert problems[0].endswith("--check=true, fix the dataset, and train again")
