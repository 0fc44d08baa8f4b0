"""Copy a LeRobot v3.0 dataset and corrupt the copy the way a buggy conversion script would.

    Corruption.ACTION_AHEAD  action[t] := action[t+3] within each episode (the last 3 frames repeat the last)
    Corruption.ACTION_BEHIND action[t] := action[t-3] within each episode (the first 3 frames repeat the first)
    Corruption.STATE_SIDES   observation.state's left_* and right_* columns exchanged; action intact
    Corruption.CAMERA_SIDES  the left_wrist and right_wrist videos exchanged (their folders, and their
                             entries in meta/info.json)

meta/stats.json is kept as the script's tool would have recomputed it: the shifted action's
min/max/mean/std/quantiles from the data, the state's per-column statistics permuted with the
columns, the two cameras' entries exchanged. The per-episode statistics in meta/episodes/ (which
lerobot-train does not read) and our sidecars in meta/so101/ are left as they were: a conversion
script knows neither.

    broken = corrupted_copy(clean_root, tmp_path / "shifted", Corruption.ACTION_AHEAD)
"""

import json
import shutil
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from tests.support.dataset_files import data_files, edit_column, edit_info

SHIFT_FRAMES = 3
LEFT_WRIST, RIGHT_WRIST = "observation.images.left_wrist", "observation.images.right_wrist"


class Corruption(StrEnum):
    """What a buggy conversion did to the copy."""

    ACTION_AHEAD = "action_ahead"  # action[t] holds what was commanded at t+3
    ACTION_BEHIND = "action_behind"  # action[t] holds what was commanded at t-3
    STATE_SIDES = "state_sides"  # the state's left and right arm blocks exchanged
    CAMERA_SIDES = "camera_sides"  # the two wrist cameras' videos exchanged


def corrupted_copy(source: Path, target: Path, corruption: Corruption) -> Path:
    """Copy `source` to `target` and apply `corruption` there; returns `target`."""
    shutil.copytree(source, target)
    match corruption:
        case Corruption.ACTION_AHEAD:
            edit_column(target, "action", lambda m, episodes, frames: _shifted(m, episodes, frames, SHIFT_FRAMES))
            _restate(target, "action")
        case Corruption.ACTION_BEHIND:
            edit_column(target, "action", lambda m, episodes, frames: _shifted(m, episodes, frames, -SHIFT_FRAMES))
            _restate(target, "action")
        case Corruption.STATE_SIDES:
            order = side_swap_order(_names(target))
            edit_column(target, "observation.state", lambda m, episodes, frames: m[:, order])
            _edit_stats(target, lambda stats: _permute(stats["observation.state"], order))
        case Corruption.CAMERA_SIDES:
            _swap_paths(target / "videos" / LEFT_WRIST, target / "videos" / RIGHT_WRIST)
            edit_info(target, lambda info: _swap_keys(info["features"]))
            _edit_stats(target, _swap_keys)
    return target


def side_swap_order(names: list[str]) -> np.ndarray:
    """Column order exchanging each left_<joint> with right_<joint>."""
    swapped = [n.replace("left_", "\0").replace("right_", "left_").replace("\0", "right_") for n in names]
    return np.array([names.index(n) for n in swapped])


def _shifted(matrix: np.ndarray, episodes: np.ndarray, frames: np.ndarray, shift: int) -> np.ndarray:
    """Within each episode, row t takes the row of frame t+shift (clamped to the episode's frames)."""
    out = matrix.copy()
    for episode in np.unique(episodes):
        rows = np.flatnonzero(episodes == episode)
        rows = rows[np.argsort(frames[rows], kind="stable")]
        sources = np.clip(np.arange(len(rows)) + shift, 0, len(rows) - 1)
        out[rows] = matrix[rows[sources]]
    return out


def _names(root: Path) -> list[str]:
    return json.loads((root / "meta" / "info.json").read_text())["features"]["observation.state"]["names"]


def _edit_stats(root: Path, change: Callable[[dict], object]) -> None:
    path = root / "meta" / "stats.json"
    stats = json.loads(path.read_text())
    change(stats)
    path.write_text(json.dumps(stats, indent=4))


def _permute(feature: dict, order: np.ndarray) -> None:
    for name, values in feature.items():
        array = np.asarray(values)
        if array.ndim == 1 and len(array) == len(order):  # per-column statistics (not "count")
            feature[name] = array[order].tolist()


def _restate(root: Path, key: str) -> None:
    """Recompute `key`'s statistics in meta/stats.json from the data, as LeRobot's tools would."""
    matrix = np.concatenate(
        [
            np.stack(pq.read_table(path, columns=[key]).column(key).to_numpy(zero_copy_only=False)).astype(np.float64)
            for path in data_files(root)
        ]
    )

    def change(stats: dict) -> None:
        feature = stats[key]
        feature.update(
            min=matrix.min(axis=0).tolist(),
            max=matrix.max(axis=0).tolist(),
            mean=matrix.mean(axis=0).tolist(),
            std=matrix.std(axis=0).tolist(),
        )
        for name in [n for n in feature if n.startswith("q") and n[1:].isdigit()]:  # q01, q10, q50, q90, q99
            feature[name] = np.quantile(matrix, int(name[1:]) / 100, axis=0).tolist()

    _edit_stats(root, change)


def _swap_keys(mapping: dict) -> None:
    mapping[LEFT_WRIST], mapping[RIGHT_WRIST] = mapping[RIGHT_WRIST], mapping[LEFT_WRIST]


def _swap_paths(a: Path, b: Path) -> None:
    parking = a.with_name(a.name + ".swap")
    a.rename(parking)
    b.rename(a)
    parking.rename(b)
