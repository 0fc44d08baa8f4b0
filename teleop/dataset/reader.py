"""The one reader of a LeRobot v3.0 dataset folder: metadata, episodes, where their videos are, their signals.

    dataset = open_reader(root)         info.json, LeRobot's episode index and the format checked; no data read
    dataset.episodes                    EpisodeEntry: index, length, fps, task, data file, one CameraFile per camera
    dataset.signals(entry)              EpisodeColumns: action and state in frame order, rows and widths checked
    dataset.timestamps(entry)           the episode's frame_index and timestamp columns, as stored

LeRobot's metadata reader (`lerobot_format.read_metadata`) reads info.json and the episode index;
the data parquet files are read here with pyarrow, each file once (a cache shared by threads: the
judge reads episodes from worker threads). Every problem is an `UnreadableDatasetError` naming the
file and the next step. The replay (policies/replay/dataset.py) and the evaluation layer
(evaluation/episode_source.py) read through this module; no other product module outside
teleop/dataset/ opens a dataset's parquet files (tests/test_one_home.py checks).

Standard library, numpy, pyarrow and the dataset package's leaves only: the evaluation layer may
import it (tests/support/layering.py).
"""

import hashlib
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from teleop.dataset.errors import UnreadableDatasetError
from teleop.dataset.format_check import format_problem
from teleop.dataset.reader_features import declared_features
from teleop.dataset.vocabulary import ACTION_KEY, STATE_KEY, camera_key

EPISODE_INDEX, FRAME_INDEX, TIMESTAMP = "episode_index", "frame_index", "timestamp"  # LeRobot's index columns
_RESUME = (
    "Next: if its recording was interrupted, resume it to repair it (so101-record --dataset.root=<folder>"
    " --dataset.resume=true), else download the dataset again"
)


@dataclass(frozen=True)
class CameraFile:
    """Where one camera's video of one episode lives inside a (shared) MP4 file."""

    camera: str  # the dataset's camera name (feature observation.images.<camera>)
    path: Path  # the MP4 file
    chunk_index: int  # LeRobot's chunk index of the file
    file_index: int  # LeRobot's file index of the file
    from_timestamp_s: float  # the episode's first frame inside the file, s
    to_timestamp_s: float  # the episode's end inside the file, s
    height: int  # px, as info.json declares
    width: int  # px


@dataclass(frozen=True)
class EpisodeEntry:
    """One episode as the metadata describes it."""

    index: int  # episode_index
    length: int  # frames
    fps: int  # frames per second
    task: str  # the task text ("; "-joined when several)
    data_path: Path  # the parquet file holding its rows
    videos: tuple[CameraFile, ...]  # one per declared video camera, in feature order (files may be absent)


@dataclass(frozen=True)
class EpisodeColumns:
    """One episode's joint signals, rows in frame order."""

    action: np.ndarray  # float32 (length, action columns)
    state: np.ndarray | None  # float32 (length, state columns); None: the dataset declares no state
    frame_index: np.ndarray  # int64 (length,): the frame of each row, ascending


@dataclass(frozen=True)
class DatasetReader:
    """An opened dataset: checked metadata; data files read on demand, each once."""

    root: Path
    repo_id: str  # the id given, else local/<folder name>
    fps: int
    robot_type: str | None
    action_names: tuple[str, ...] | None  # per-column names; None: no action feature
    state_names: tuple[str, ...] | None  # per-column names; None: no state feature
    cameras: dict[str, tuple[int, int]]  # video camera name -> (height, width) px, in feature order
    episodes: tuple[EpisodeEntry, ...]
    revision: str  # hash of info.json and the episode index: changes whenever either does
    _cache: dict[Path, dict[str, np.ndarray]] = field(default_factory=dict, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def entry(self, index: int) -> EpisodeEntry:
        """The entry of episode `index`.

        Raises:
            UnreadableDatasetError: the dataset has no such episode.
        """
        for episode in self.episodes:
            if episode.index == index:
                return episode
        held = [episode.index for episode in self.episodes]
        raise UnreadableDatasetError(
            f"{self.root} has no episode {index}; it holds episodes {min(held)}..{max(held)}. Next: pick one of those"
        )

    def signals(self, entry: EpisodeEntry) -> EpisodeColumns:
        """The action (and state) rows of one episode, sorted by frame_index.

        Raises:
            UnreadableDatasetError: its data file cannot be read, holds another number of rows than
                the metadata says, or columns of another width than info.json declares.
        """
        if self.action_names is None:
            raise UnreadableDatasetError(
                f"{self.root} declares no '{ACTION_KEY}' feature: it holds no joint signals."
                " Next: pass a dataset so101-record wrote, --dataset.root=<folder>"
            )
        keys = (ACTION_KEY, STATE_KEY) if self.state_names is not None else (ACTION_KEY,)
        table = self._columns(entry.data_path, (EPISODE_INDEX, FRAME_INDEX, *keys))
        rows = np.flatnonzero(table[EPISODE_INDEX] == entry.index)
        rows = rows[np.argsort(table[FRAME_INDEX][rows], kind="stable")]
        if len(rows) != entry.length:
            raise UnreadableDatasetError(
                f"episode {entry.index}: {entry.data_path} holds {len(rows)} rows, the metadata says"
                f" {entry.length}. {_RESUME}"
            )
        return EpisodeColumns(
            action=table[ACTION_KEY][rows],
            state=table[STATE_KEY][rows] if self.state_names is not None else None,
            frame_index=table[FRAME_INDEX][rows].astype(np.int64),
        )

    def timestamps(self, entry: EpisodeEntry) -> tuple[np.ndarray, np.ndarray]:
        """(frame_index, timestamp in s) of the episode's rows in file order, unchecked: what a health check examines.

        Raises:
            UnreadableDatasetError: its data file or these columns cannot be read.
        """
        table = self._columns(entry.data_path, (EPISODE_INDEX, FRAME_INDEX, TIMESTAMP))
        rows = np.flatnonzero(table[EPISODE_INDEX] == entry.index)
        return table[FRAME_INDEX][rows], table[TIMESTAMP][rows]

    def _columns(self, path: Path, names: tuple[str, ...]) -> dict[str, np.ndarray]:
        """The columns `names` of one data file, read once and kept (the lock: worker threads share them)."""
        with self._lock:
            cached = self._cache.setdefault(path, {})
            missing = [name for name in names if name not in cached]
            if missing:
                try:
                    table = pq.read_table(path, columns=missing)
                except (OSError, KeyError, ValueError, pa.ArrowException) as e:
                    reason = (str(e).splitlines() or [type(e).__name__])[0]
                    raise UnreadableDatasetError(f"cannot read {path} ({reason}). {_RESUME}") from e
                widths = {ACTION_KEY: self.action_names, STATE_KEY: self.state_names}
                for name in missing:
                    declared = widths.get(name)
                    column = table.column(name)
                    cached[name] = column.to_numpy() if declared is None else _matrix(column, name, len(declared), path)
            return {name: cached[name] for name in names}


def open_reader(root: Path, repo_id: str | None = None, *, videos: bool = True) -> DatasetReader:
    """Open a dataset folder: its format, info.json's features and LeRobot's episode index, checked.

    `videos=False`: the caller reads no video, so an empty video file is no reason to refuse.

    Raises:
        UnreadableDatasetError: not a v3.0 dataset LeRobot can open, inconsistent features, broken
            metadata, or no saved episodes.
    """
    root = Path(root).expanduser().resolve()
    info_path = root / "meta" / "info.json"
    if not info_path.is_file():
        raise UnreadableDatasetError(
            f"{root} is not a LeRobot dataset (no meta/info.json). Next: pass the folder so101-record wrote,"
            " --dataset.root=<folder>"
        )
    if (problem := format_problem(root, repo_id, videos=videos)) is not None:  # one line, before LeRobot's many
        raise UnreadableDatasetError(problem)
    info_bytes = info_path.read_bytes()
    info = json.loads(info_bytes)  # format_problem read it: a JSON object with features
    features = declared_features(root, info)
    name = repo_id or f"local/{root.name}"
    # Imported here: lerobot_format imports LeRobot (and torch), which a command's --help need not wait for.
    from teleop.dataset.lerobot_format import read_metadata

    try:
        meta = read_metadata(root, name)
    except Exception as e:  # LeRobot raises many kinds for broken metadata (and hub errors for missing files)
        raise UnreadableDatasetError(
            f"cannot read the metadata of {root}: {type(e).__name__}: {e}. Next: check meta/ is complete"
            " (a dataset copied while recording, or never finalized, is not)"
        ) from e
    if meta.episodes is None or meta.total_episodes == 0:
        raise UnreadableDatasetError(f"{root} holds no saved episodes. Next: record some with so101-record")
    rows = meta.episodes.to_list() if hasattr(meta.episodes, "to_list") else list(meta.episodes)
    fps = int(info.get("fps", meta.fps))
    episodes = tuple(_entry(root, meta, row, fps, features.cameras) for row in rows)
    # The same hash the evaluation store has always keyed its records on: keep its inputs as they are.
    revision = hashlib.sha256(info_bytes + json.dumps(rows, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return DatasetReader(
        root=root,
        repo_id=name,
        fps=fps,
        robot_type=info.get("robot_type"),
        action_names=features.action_names,
        state_names=features.state_names,
        cameras=features.cameras,
        episodes=episodes,
        revision=revision,
    )


def _entry(root: Path, meta: object, row: dict, fps: int, cameras: dict[str, tuple[int, int]]) -> EpisodeEntry:
    index = int(row[EPISODE_INDEX])
    videos = []
    for camera, (height, width) in cameras.items():
        key = camera_key(camera)
        try:
            videos.append(
                CameraFile(
                    camera=camera,
                    path=root / meta.get_video_file_path(index, key),  # type: ignore[attr-defined]
                    chunk_index=int(row[f"videos/{key}/chunk_index"]),
                    file_index=int(row[f"videos/{key}/file_index"]),
                    from_timestamp_s=float(row[f"videos/{key}/from_timestamp"]),
                    to_timestamp_s=float(row[f"videos/{key}/to_timestamp"]),
                    height=height,
                    width=width,
                )
            )
        except (KeyError, IndexError, TypeError, ValueError) as e:
            raise UnreadableDatasetError(
                f"{root}: the episode index (meta/episodes/) has no video entry for camera '{camera}' of episode"
                f" {index} ({e}). Next: repair or re-download the dataset"
            ) from e
    tasks = row.get("tasks") or []
    return EpisodeEntry(
        index=index,
        length=int(row["length"]),
        fps=fps,
        task="; ".join(str(t) for t in tasks) if isinstance(tasks, list) else str(tasks),
        data_path=root / meta.get_data_file_path(index),  # type: ignore[attr-defined]
        videos=tuple(videos),
    )


def _matrix(column: pa.ChunkedArray, key: str, width: int, path: Path) -> np.ndarray:
    """A fixed-size-list column as a float32 (rows, width) matrix, its width checked against info.json's."""
    array = column.combine_chunks()
    values = np.asarray(array.flatten().to_numpy(zero_copy_only=False), dtype=np.float32)
    if len(array) == 0:
        return values.reshape(0, width)
    if values.size % len(array) != 0 or values.size // len(array) != width:
        raise UnreadableDatasetError(
            f"{path}: '{key}' holds {values.size // len(array)} values per frame, but info.json declares {width}."
            " Next: the dataset's metadata and data disagree; re-export it"
        )
    return values.reshape(len(array), width)
