"""Loading a tiny checkpoint twice: as our predictor, and as LeRobot's own objects for reference runs."""

import json
from pathlib import Path

import numpy as np

from policies.checkpoint import LoadedPolicy, load_policy, read_checkpoint
from policies.contract import RigSpec, check_contract
from policies.engine import PolicyInput
from policies.predictor import ROBOT_TYPE, LeRobotPredictor
from policies.testing.tiny_policies import TEST_CAMERAS

RIG = RigSpec(cameras={name: (height, width) for name, height, width in TEST_CAMERAS})


def load(directory: Path) -> LoadedPolicy:
    return load_policy(read_checkpoint(str(directory)), "cpu")


def predictor(directory: Path) -> LeRobotPredictor:
    checkpoint = read_checkpoint(str(directory))
    return LeRobotPredictor(load_policy(checkpoint, "cpu"), check_contract(checkpoint.features, RIG))


def with_config(directory: Path, **changes) -> Path:
    """Change fields of a (copied) checkpoint's config.json, as a user editing it would."""
    path = directory / "config.json"
    config = json.loads(path.read_text())
    config.update(changes)
    path.write_text(json.dumps(config, indent=2))
    return directory


def lerobot_action(loaded: LoadedPolicy, inputs: PolicyInput) -> np.ndarray:
    """What lerobot-record/rollout's loop gets for this observation: predict_action -> select_action."""
    import torch
    from lerobot.common.control_utils import predict_action

    observation = {"observation.state": inputs.state}
    observation |= {f"observation.images.{name}": image for name, image in inputs.images.items()}
    action = predict_action(
        observation,
        loaded.policy,
        torch.device("cpu"),
        loaded.preprocessor,
        loaded.postprocessor,
        use_amp=False,
        task=inputs.task,
        robot_type=ROBOT_TYPE,
    )
    return action.squeeze(0).numpy()
