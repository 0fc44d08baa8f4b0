"""Per-episode facts kept beside a LeRobot dataset, where no LeRobot loader looks.

    meta/so101/episodes/episode-000003/timing.parquet   one row per frame: frame_index + timing facts
    meta/so101/episodes/episode-000003/quality.json     the episode's quality card

LeRobot reads parquet only from data/*/ and meta/episodes/*/ (and info/stats/tasks), so these
files never become features and `lerobot-train` never feeds them to a policy; they still travel
with the dataset (copying the directory, push_to_hub). They are written inside an episode's commit,
so they exist exactly for the saved episodes.
"""

import dataclasses
import enum
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from teleop.dataset.journal import SO101_DIR

SIDECAR_DIR = f"{SO101_DIR}/episodes"
TIMING_FILE = "timing.parquet"
QUALITY_FILE = "quality.json"


def episode_dir(root: Path, index: int) -> Path:
    """The sidecar directory of one episode."""
    return Path(root) / SIDECAR_DIR / f"episode-{index:06d}"


def quality_json(quality: Mapping) -> str:
    """Serialise a quality card (numpy scalars, enums, dataclasses and paths allowed).

    Raises:
        TypeError: a value that has no JSON form.
    """
    return json.dumps(quality, indent=1, sort_keys=True, default=_jsonable)


def write_quality(root: Path, index: int, text: str) -> Path:
    """Write an episode's quality card (already serialised with `quality_json`)."""
    path = episode_dir(root, index) / QUALITY_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def write_timing(root: Path, index: int, rows: Sequence[Mapping[str, float]]) -> Path:
    """Write one row of timing facts per frame; keys missing from a row become NaN."""
    columns: dict[str, list[float]] = {}
    for row in rows:
        for key in row:
            columns.setdefault(key, [])
    for key, values in columns.items():
        values.extend(float(row.get(key, np.nan)) for row in rows)
    table = pa.table({"frame_index": pa.array(np.arange(len(rows), dtype=np.int64)), **columns})
    path = episode_dir(root, index) / TIMING_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path


def read_timing(root: Path, index: int) -> dict[str, np.ndarray]:
    """An episode's timing facts, column by column (frame_index included)."""
    table = pq.read_table(episode_dir(root, index) / TIMING_FILE)
    return {name: table.column(name).to_numpy() for name in table.column_names}


def read_quality(root: Path, index: int) -> dict:
    """An episode's quality card as it was saved."""
    return json.loads((episode_dir(root, index) / QUALITY_FILE).read_text())


def _jsonable(value: object) -> object:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"quality card value {value!r} ({type(value).__name__}) has no JSON form")
