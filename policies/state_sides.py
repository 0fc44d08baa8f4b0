"""Was a checkpoint trained on data whose state blocks were swapped? Its normalizer's statistics say.

A policy trained on a dataset whose `observation.state` left_* columns hold the right arm (a buggy
conversion; `action` intact) reads each arm's state as the other's on the rig. The checkpoint keeps
no frames, but its preprocessor's state file keeps the training data's per-joint mean, std, min and
max of state and action. A follower's state sits where its own actions sent it, so each arm's state
statistics match its own arm's action statistics; after a swap they match the other arm's:

    distance(state side s, action side a) = mean over body joints and (mean, min, max) of
                                            |state stat - action stat| / the joint's spread

Arms whose statistics are alike (a symmetric task, or the tiny test checkpoints) give no verdict.
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from robot.joints import GRIPPER, JOINT_NAMES, Side, joint_key
from teleop.dataset.vocabulary import ACTION_KEY, STATE_KEY

COMPARED = ("mean", "min", "max")  # the statistics compared; std and quantiles follow from the same data
MIN_SPREAD = 1.0  # joint units: a joint's spread is at least this, so a still joint does not divide by ~0
# Swapped when the crossed pairing (both arms' distances summed) is this much closer, in spreads, than
# the straight one, and at most SWAP_RATIO of it. The statistics of virtual-rig recordings (fold task,
# mirrored fold) and of the test datasets measure straight 0.07-0.13 against crossed 1.09-2.67; their
# copies with the state blocks swapped measure the reverse.
SWAP_MIN_GAP = 0.5
SWAP_RATIO = 0.5


@dataclass(frozen=True, eq=False)  # compared by identity: arrays have no single truth value
class JointStatistics:
    """Per-joint statistics of a checkpoint's training data, in the checkpoint's column order."""

    state: dict[str, np.ndarray]  # "mean", "std", "min", "max" -> one value per state column
    action: dict[str, np.ndarray]  # the same for action columns


def read_joint_statistics(directory: Path) -> JointStatistics | None:
    """The statistics in a checkpoint's preprocessor state files; None when none holds both state and action."""
    for path in sorted(Path(directory).glob("policy_preprocessor_*.safetensors")):
        stats = _read(path)
        state = {name: stats[f"{STATE_KEY}.{name}"] for name in (*COMPARED, "std") if f"{STATE_KEY}.{name}" in stats}
        action = {name: stats[f"{ACTION_KEY}.{name}"] for name in (*COMPARED, "std") if f"{ACTION_KEY}.{name}" in stats}
        if len(state) == len(action) == len(COMPARED) + 1:
            return JointStatistics(state, action)
    return None


def side_distances(
    statistics: JointStatistics, state_names: tuple[str, ...], action_names: tuple[str, ...]
) -> dict[tuple[Side, Side], float] | None:
    """(state side, action side) -> how far apart their statistics are, in joint spreads; None: not two arms."""
    body = [joint for joint in JOINT_NAMES if joint != GRIPPER]
    try:
        state_columns = {side: [state_names.index(joint_key(side, j)) for j in body] for side in Side}
        action_columns = {side: [action_names.index(joint_key(side, j)) for j in body] for side in Side}
    except ValueError:
        return None
    if any(len(statistics.state[n]) != len(state_names) for n in statistics.state) or any(
        len(statistics.action[n]) != len(action_names) for n in statistics.action
    ):
        return None
    spreads = np.maximum(
        MIN_SPREAD,
        np.max(
            [statistics.state["std"][state_columns[s]] for s in Side]
            + [statistics.action["std"][action_columns[s]] for s in Side],
            axis=0,
        ),
    )
    out = {}
    for state_side in Side:
        for action_side in Side:
            state, action = state_columns[state_side], action_columns[action_side]
            gaps = [np.abs(statistics.state[n][state] - statistics.action[n][action]) / spreads for n in COMPARED]
            out[state_side, action_side] = float(np.mean(gaps))
    return out


def swapped_state_problem(
    statistics: JointStatistics | None, state_names: tuple[str, ...], action_names: tuple[str, ...]
) -> str | None:
    """A contract problem when the statistics say the training data's state blocks were swapped; else None."""
    distances = None if statistics is None else side_distances(statistics, state_names, action_names)
    if distances is None:
        return None
    straight = distances[Side.LEFT, Side.LEFT] + distances[Side.RIGHT, Side.RIGHT]
    crossed = distances[Side.LEFT, Side.RIGHT] + distances[Side.RIGHT, Side.LEFT]
    if not (straight - crossed >= SWAP_MIN_GAP and crossed <= SWAP_RATIO * straight):
        return None
    return (
        f"the checkpoint's {STATE_KEY} statistics of the left arm match the right arm's {ACTION_KEY} statistics and"
        f" vice versa ({crossed:.2f} spreads apart crossed, {straight:.2f} straight): it was trained on data whose"
        " left and right state blocks were swapped, and would read each arm's state as the other's. Next: run"
        " so101-review --dataset.root=<training dataset> --check=true, fix the dataset, and train again"
    )


def _read(path: Path) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    try:
        return {key: np.asarray(value, dtype=np.float64).reshape(-1) for key, value in load_file(str(path)).items()}
    except Exception:  # a damaged state file is refused where the processors load, with its name
        return {}
