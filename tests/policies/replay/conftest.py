"""Fixtures of the replay tests: one virtual-rig recording per session, and ways to damage copies of it.

The recording is made by so101-record itself on the virtual rig (two 2-second episodes, three
96x128 cameras, h264), exactly as a user would make one. Tests that change a dataset work on a
copy (`dataset_copy`), and helpers below edit a copy's info.json or data the way a broken or
foreign dataset would look.
"""

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from tests.commands_helpers import run
from tests.test_record_e2e import RELAXED_CAPTURE

CAMERAS = ("left_wrist", "right_wrist", "overhead")
EPISODE_FRAMES = 60  # 2 s at 30 fps


@dataclass(frozen=True)
class Recording:
    """A dataset recorded on the virtual rig, and the rig file it was recorded with."""

    root: Path  # the dataset folder (never modified)
    rig_file: Path  # the virtual rig's YAML (calibration dir, runtime dir)
    runtime_dir: Path  # where that rig's pty links and control socket live


def rig_yaml(folder: Path) -> Path:
    """A virtual rig living under `folder`, pre-calibrated, with small cameras."""
    cameras = [{"kind": "virtual", "name": name, "view": name, "width": 128, "height": 96,
                "phase_s": 0.003 * (i + 1), "seed": i, "capture": RELAXED_CAPTURE}
               for i, name in enumerate(CAMERAS)]  # fmt: skip
    rig = {
        "id": "replay_rig",
        "calibration": {"dir": str(folder / "calibration")},
        "bus": {"reply_timeout_ms": 20.0, "read_deadline_ms": 50.0},
        "cameras": cameras,
        "virtual": {"runtime_dir": str(folder / "run"), "timing": "instant", "calibrated": True},
    }
    path = folder / "rig.yaml"
    path.write_text(yaml.safe_dump(rig))
    return path


@pytest.fixture(scope="session")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    """Two episodes of the scripted cloth fold, recorded by so101-record on the virtual rig."""
    folder = tmp_path_factory.mktemp("replay_recording")
    rig = rig_yaml(folder)
    root = folder / "dataset"
    result = run("so101-record", f"--config_path={rig}", "--dataset.repo_id=test/replay", f"--dataset.root={root}",
                 "--dataset.vcodec=h264", "--session.episode_s=2", "--session.reset_s=0.5",
                 "--session.num_episodes=2", "--gates.min_fps=20", "--gates.max_period_error_p99_ms=200",
                 "--gates.max_skew_p99_ms=200", timeout_s=300)  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return Recording(root=root, rig_file=rig, runtime_dir=folder / "run")


@pytest.fixture
def dataset_copy(tmp_path: Path, recording: Recording) -> Path:
    """A private copy of the recording that a test may damage."""
    root = tmp_path / "dataset"
    shutil.copytree(recording.root, root)
    return root


def edit_info(root: Path, change) -> None:
    """Apply `change(info)` to a dataset's meta/info.json."""
    path = root / "meta" / "info.json"
    info = json.loads(path.read_text())
    change(info)
    path.write_text(json.dumps(info, indent=2))


def data_files(root: Path) -> list[Path]:
    return sorted((root / "data").rglob("*.parquet"))


def edit_column(root: Path, column: str, change) -> None:
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
