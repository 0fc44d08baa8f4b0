"""A copy of a dataset whose episodes carry virtual ground truth in their quality cards, as the virtual rig keeps it.

The synthetic dataset has no sidecars. Each copied episode gets the two files `check_sidecar` wants
to call its sidecar "ok": a timing file that logs the episode's recorded joint states frame by frame,
and a quality card with the episode's frame count (and, where given, its "truth").
"""

import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from teleop.dataset.sidecar import (
    QUALITY_FILE,
    episode_dir,
    quality_json,
    read_quality,
    recorded_states,
    write_quality,
    write_timing,
)

CRITERIA = ("R1", "R2", "R3")
DEFINITION = "cloth_truth@1"


def truth_of(scores: Sequence[float], seed: int, definition: str = DEFINITION) -> dict:
    """A card's "truth" entry: the scores of R1..R3, the numbers behind them, the seed and the cloth."""
    return {
        "definition": definition,
        "scores": dict(zip(CRITERIA, scores, strict=True)),
        "facts": {"fold_overlap": scores[1], "displacement_m": 0.12 * scores[2]},
        "seed": seed,
        "cloth": {"x_m": 0.01, "y_m": 0.22, "yaw_deg": -7.5, "size_m": 0.21},
    }


def copy_with_truth(
    source_root: Path,
    root: Path,
    truths: Mapping[int, Sequence[float]],
    *,
    definition: str = DEFINITION,
    trimmed: Sequence[int] = (),
) -> Path:
    """Copy a dataset to `root` and give every episode a sidecar that holds; `truths[i]` puts truth in card i.

    Episodes absent from `truths` get a card without truth; those in `trimmed` a "trimmed_from" entry.
    The seed of episode i is 1000 + i.
    """
    shutil.copytree(source_root, root)
    names, states = recorded_states(root)
    for index, episode_states in states.items():
        rows = [{f"state.{n}": float(v) for n, v in zip(names, row, strict=True)} for row in episode_states]
        write_timing(root, index, rows)
        card: dict = {"frames": len(episode_states), "achieved_fps": 30.0, "verdict": "keep"}
        if index in truths:
            card["truth"] = truth_of(truths[index], 1000 + index, definition)
        if index in trimmed:
            card["trimmed_from"] = {"episode": index, "frames": [0, len(episode_states) + 30]}
        write_quality(root, index, quality_json(card))
    return root


def make_stale(root: Path, index: int) -> None:
    """Make an episode's card describe another episode (one frame more than it has), as an edit leaves it."""
    card = read_quality(root, index)
    card["frames"] = int(card["frames"]) + 1
    (episode_dir(root, index) / QUALITY_FILE).write_text(json.dumps(card))
