"""The studio's datasets: what the workspace holds, each one's episode counter and quality cards.

Read while a recording adds episodes, so only what the recorder makes durable per save is read:
LeRobot's episode count in info.json and the quality card beside each saved episode (the dataset
package's sidecar). An episode discarded or re-recorded never reaches either.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evaluation.studio.actions import DATASETS
from teleop.dataset.format_check import saved_episodes
from teleop.dataset.sidecar import read_quality, sidecar_indices

CARD_FIELDS = (
    "episode",
    "frames",
    "duration_s",
    "achieved_fps",
    "skew_p99_ms",
    "idle_fraction",
    "limit_hits",
    "peak_temperature_c",
    "failed_gates",
    "verdict",
)


@dataclass(frozen=True)
class DatasetView:
    """A dataset of the workspace as the page lists it."""

    name: str
    root: str
    episodes: int  # saved: what LeRobot loads now
    cards: tuple[dict, ...]  # the quality card of each saved episode, newest last


def workspace_datasets(workspace: Path) -> list[DatasetView]:
    """Every dataset folder under `<workspace>/datasets`, by name."""
    folder = workspace / DATASETS
    if not folder.is_dir():
        return []
    return [dataset_view(path) for path in sorted(folder.iterdir()) if (path / "meta").is_dir()]


def dataset_view(root: Path) -> DatasetView:
    """One dataset's counter and cards (a card that cannot be read, mid-write, is left for the next poll)."""
    cards = []
    for index in sidecar_indices(root):
        try:
            card = read_quality(root, index)
        except (OSError, ValueError):
            continue
        cards.append({key: card.get(key) for key in CARD_FIELDS if key in card})
    return DatasetView(root.name, str(root), saved_episodes(root), tuple(cards))
