"""Does a dataset fit the rig? Which dataset column drives which rig joint, and at what rate.

    fit = fit_dataset(dataset, joint_map="", rig_fps=30, fps=None)
    fit.actions(episode_data)   -> float64 (n, 12) in BIMANUAL_KEYS order, NaN where a joint is not driven
    fit.states(episode_data)    -> the same for the recorded follower state

A dataset recorded on this kind of rig (the 12 `left_/right_<joint>.pos` names) fits as it is,
whatever its column order. Anything else is refused with the difference in words, unless a
`--joint_map` says how to read it:
    --joint_map=left      a single-arm recording (shoulder_pan.pos ... gripper.pos) drives the left arm
    --joint_map=right     ... the right arm
    --joint_map='{"left_shoulder_pan.pos": "arm_a_pan", ...}'   rig joint -> dataset column, any subset
Rig joints the map leaves out are not driven: they hold where the episode found them.
The replay rate is the dataset's fps; one that differs from the rig's control rate is refused
unless `--fps` sets the rate (each recorded frame then takes one tick at that rate).
"""

import json
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from policies.replay.dataset import EpisodeData, ReplayDataset
from policies.replay.errors import DatasetFitError, ReplayOptionError
from robot.config import MAX_FPS  # a replay runs on the rig, so the rig's limit is its limit
from robot.joint_map import SINGLE_ARM_NAMES, JointMapError, parse_joint_map
from robot.joints import BIMANUAL_KEYS


@dataclass(frozen=True)
class DatasetFit:
    """How a dataset's columns drive the rig's joints, and the replay rate."""

    action_columns: Mapping[str, int]  # rig key -> action column; keys absent are held
    state_columns: Mapping[str, int]  # rig key -> state column (the same names), when the dataset has them
    fps: float  # the replay's control rate, Hz
    dataset_fps: int  # the rate it was recorded at, Hz
    mapped: bool  # True when a --joint_map was used

    @property
    def held(self) -> tuple[str, ...]:
        """Rig joints no dataset column drives."""
        return tuple(k for k in BIMANUAL_KEYS if k not in self.action_columns)

    @property
    def time_scale(self) -> float:
        """Replay duration / recorded duration (1.0 at the recorded rate)."""
        return self.dataset_fps / self.fps

    def actions(self, episode: EpisodeData) -> np.ndarray:
        """float64 (n, 12) in BIMANUAL_KEYS order; NaN in the columns of held joints."""
        return _select(episode.actions, self.action_columns)

    def states(self, episode: EpisodeData) -> np.ndarray | None:
        """The recorded follower state the same way, or None when the dataset has none."""
        if episode.states is None or not self.state_columns:
            return None
        return _select(episode.states, self.state_columns)


def _select(matrix: np.ndarray, columns: Mapping[str, int]) -> np.ndarray:
    out = np.full((len(matrix), len(BIMANUAL_KEYS)), np.nan)
    for i, key in enumerate(BIMANUAL_KEYS):
        if key in columns:
            out[:, i] = matrix[:, columns[key]]
    return out


def _columns(names: tuple[str, ...], mapping: Mapping[str, str]) -> dict[str, int]:
    return {key: names.index(name) for key, name in mapping.items() if name in names}


def _mismatch(names: tuple[str, ...]) -> str:
    """The difference between a dataset's action names and the rig's, in words."""
    if set(names) == set(SINGLE_ARM_NAMES):
        return (
            f"it is a single-arm recording ({len(names)} joints: {', '.join(names)}) and this rig has two arms"
            f" ({len(BIMANUAL_KEYS)} joints). Next: replay it on one arm with --joint_map=left or --joint_map=right"
            " (the other arm holds its pose)"
        )
    missing = [k for k in BIMANUAL_KEYS if k not in names]
    extra = [n for n in names if n not in BIMANUAL_KEYS]
    parts = [f"its action has {len(names)} values, the rig {len(BIMANUAL_KEYS)}"] if len(names) != 12 else []
    if missing:
        parts.append(f"the rig's {', '.join(missing)} are not in it")
    if extra:
        parts.append(f"it has {', '.join(extra)}, which the rig does not")
    example = json.dumps({missing[0] if missing else BIMANUAL_KEYS[0]: extra[0] if extra else names[0]})
    return "; ".join(parts) + f". Next: say which column drives which joint, e.g. --joint_map='{example}'"


def fit_dataset(dataset: ReplayDataset, *, joint_map: str, rig_fps: float, fps: float | None) -> DatasetFit:
    """Check a dataset against the rig (12 bimanual joints, the control rate).

    Raises:
        DatasetFitError: joints or rate differ and no option says how to bridge them.
        ReplayOptionError: a joint map or fps that cannot be used.
    """
    names = dataset.action_names
    try:
        mapping = parse_joint_map(joint_map)
    except JointMapError as e:
        raise ReplayOptionError(str(e)) from e
    if mapping is None:
        if set(names) != set(BIMANUAL_KEYS) or len(names) != len(BIMANUAL_KEYS):
            raise DatasetFitError(f"{dataset.root} does not fit this rig: {_mismatch(names)}")
        mapping = {k: k for k in BIMANUAL_KEYS}
    absent = sorted(name for name in mapping.values() if name not in names)
    if absent:
        raise DatasetFitError(
            f"joint_map names {', '.join(absent)}, which the dataset's action does not have;"
            f" its columns are {', '.join(names)}"
        )
    state_columns = _columns(dataset.state_names, mapping) if dataset.state_names else {}
    if fps is None:
        if abs(dataset.fps - rig_fps) > 1e-6:
            raise DatasetFitError(
                f"{dataset.root} was recorded at {dataset.fps} fps and this rig runs at {rig_fps:g} fps."
                f" Next: pass --fps={dataset.fps} to replay it at its own rate, or --fps={rig_fps:g} to play"
                " one recorded frame per tick of the rig's rate (faster or slower than recorded)"
            )
        fps = float(dataset.fps)
    if not 0 < fps <= MAX_FPS:
        raise ReplayOptionError(f"fps={fps:g}: expected 0 < fps <= {MAX_FPS}")
    return DatasetFit(
        action_columns=_columns(names, mapping),
        state_columns=state_columns,
        fps=float(fps),
        dataset_fps=dataset.fps,
        mapped=joint_map.strip() != "",
    )
