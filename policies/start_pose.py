"""Where rollouts start: where the arms are, or where the demonstrations the policy learned from started.

    --start_pose=here            each rollout starts from wherever the arms stand (LeRobot's way)
    --start_pose=demonstrations  before each rollout the followers move, at the ramp speed, to the
                                 median first state of the checkpoint's training episodes

A policy has only seen its demonstrations' starts; begun from a pose none of them shows (the
followers' rest pose, say, where every demonstration started with the arms raised), it is off its
training distribution from the first frame. The training dataset is the one the checkpoint's
train_config.json names (policies/checkpoint.py), read through the one dataset reader.
"""

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import numpy as np

from policies.checkpoint import training_dataset_root
from policies.errors import PolicyError
from robot.joint_values import JointValues
from robot.joints import BIMANUAL_KEYS
from teleop.dataset.errors import DatasetError
from teleop.dataset.reader import open_reader


class StartPose(StrEnum):
    """Where each rollout starts."""

    HERE = "here"  # wherever the arms are when the policy takes charge
    DEMONSTRATIONS = "demonstrations"  # the median first state of the training episodes, reached first


@dataclass(frozen=True)
class DemonstrationStart:
    """The pose rollouts start from, and where it came from (for the run's first lines)."""

    pose: JointValues
    root: Path  # the training dataset
    episodes: int  # how many episodes' first states the median is of

    def describe(self) -> str:
        """One line for the console."""
        return (
            "rollouts start where the demonstrations did: the median first state of"
            f" {self.episodes} episodes of {self.root}"
        )


def demonstrations_start(checkpoint: Path) -> DemonstrationStart:
    """The median first follower state over the episodes the checkpoint was trained on.

    Raises:
        PolicyError: the checkpoint names no training dataset found here, or it holds no state in the
            rig's joint order.
    """
    root = training_dataset_root(checkpoint)
    if root is None:
        raise PolicyError(
            f"--start_pose=demonstrations: {checkpoint} names no training dataset found on this machine"
            " (its train_config.json's dataset.root or repo_id). Next: keep the training dataset there,"
            " or run with --start_pose=here"
        )
    try:
        dataset = open_reader(root, videos=False)
        if dataset.state_names is not None and tuple(dataset.state_names) != BIMANUAL_KEYS:
            raise PolicyError(
                f"--start_pose=demonstrations: {root}'s observation.state is not the rig's 12 joints in order"
                f" ({', '.join(dataset.state_names[:3])}, ...). Next: run with --start_pose=here"
            )
        firsts = [dataset.signals(entry).state for entry in dataset.episodes]
    except DatasetError as error:
        raise PolicyError(f"--start_pose=demonstrations: {error}") from error
    if any(state is None for state in firsts):
        raise PolicyError(
            f"--start_pose=demonstrations: {root} holds no observation.state. Next: run with --start_pose=here"
        )
    starts = np.stack([state[0] for state in firsts if state is not None]).astype(np.float64)
    return DemonstrationStart(JointValues.from_vector(np.median(starts, axis=0)), root, len(starts))
