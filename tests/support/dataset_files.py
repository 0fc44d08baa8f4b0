"""Read and change a LeRobot dataset's files in place (meta/info.json, data/*.parquet).

Tests use these on a private copy, to make a dataset look broken or foreign, or to read back what
was recorded.
"""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

# change(matrix, episode_index, frame_index) -> matrix, one row per frame of a data file.
ColumnChange = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def edit_info(root: Path, change: Callable[[dict[str, Any]], object]) -> None:
    """Apply `change(info)` to a dataset's meta/info.json."""
    path = root / "meta" / "info.json"
    info = json.loads(path.read_text())
    change(info)
    path.write_text(json.dumps(info, indent=2))


def data_files(root: Path) -> list[Path]:
    """A dataset's data files (parquet), in path order."""
    return sorted((root / "data").rglob("*.parquet"))


def edit_column(root: Path, column: str, change: ColumnChange) -> None:
    """Apply `change(matrix, episode_index, frame_index) -> matrix` to a fixed-size-list column of every data file."""
    for path in data_files(root):
        table = pq.read_table(path)
        values = table.column(column).combine_chunks()
        width = values.type.list_size
        matrix = values.flatten().to_numpy(zero_copy_only=False).reshape(len(values), width).astype(np.float32)
        matrix = change(matrix, table.column("episode_index").to_numpy(), table.column("frame_index").to_numpy())
        flat = pa.array(matrix.reshape(-1), type=pa.float32())
        new = pa.FixedSizeListArray.from_arrays(flat, matrix.shape[1])
        schema = table.schema
        table = table.set_column(table.schema.get_field_index(column), column, new)
        pq.write_table(table.replace_schema_metadata(schema.metadata), path)


def recorded_actions(root: Path, episode: int) -> np.ndarray:
    """An episode's action column, frame by frame (float32 (n, 12))."""
    rows = []
    for path in data_files(root):
        table = pq.read_table(path, columns=["action", "episode_index", "frame_index"])
        episodes = table.column("episode_index").to_numpy()
        values = table.column("action").combine_chunks()
        matrix = values.flatten().to_numpy(zero_copy_only=False).reshape(len(values), -1)
        order = np.argsort(table.column("frame_index").to_numpy())
        rows.append(matrix[order][episodes[order] == episode])
    return np.concatenate(rows).astype(np.float32)
