"""Read-only access to a LeRobot v3.0 dataset on disk, as the evaluation layer sees it: episodes, videos, signals.

The dataset package's one reader (teleop/dataset/reader.py) reads the metadata and the data files
(each once, shared by the judge's worker threads); this module keeps the evaluation layer's views of
its records (camera views mapped onto our roles, fingerprints) and re-raises the reader's
`UnreadableDatasetError` as `DatasetReadError` with the same message. Everything it returns is a
typed, frozen record.

Several episodes share one MP4 per camera: frame `i` of an episode is at `from_timestamp + i / fps`
in its file (see `VideoSegment.file_time_s`).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evaluation.errors import DatasetReadError
from evaluation.view_map import resolve_views
from robot.joints import BODY_JOINTS, CAMERA_ROLES, GRIPPER, Side
from teleop.dataset.errors import UnreadableDatasetError
from teleop.dataset.reader import CameraFile, DatasetReader, EpisodeEntry, open_reader
from teleop.dataset.vocabulary import ACTION_KEY, STATE_KEY

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class VideoSegment:
    """Where one camera view of one episode lives inside a (shared) MP4 file."""

    view: str  # e.g. "overhead" (one of CAMERA_ROLES; `--dataset.views` may map another camera onto it)
    camera: str  # the dataset's own camera name, e.g. "top" (the key is observation.images.<camera>)
    path: Path  # absolute path of the MP4 file
    chunk_index: int  # LeRobot chunk index of the file
    file_index: int  # LeRobot file index of the file
    from_timestamp_s: float  # episode start inside the file, seconds
    to_timestamp_s: float  # episode end inside the file, seconds
    width: int  # pixels
    height: int  # pixels

    def file_time_s(self, frame_index: int, fps: int) -> float:
        """Time inside the MP4 file of an episode frame."""
        return self.from_timestamp_s + frame_index / fps

    @classmethod
    def of(cls, view: str, video: CameraFile) -> VideoSegment:
        """The reader's record of a camera's file, seen as one of our views."""
        return cls(
            view=view,
            camera=video.camera,
            path=video.path,
            chunk_index=video.chunk_index,
            file_index=video.file_index,
            from_timestamp_s=video.from_timestamp_s,
            to_timestamp_s=video.to_timestamp_s,
            width=video.width,
            height=video.height,
        )


@dataclass(frozen=True)
class EpisodeRecord:
    """One recorded episode: its length, task and video segments."""

    index: int  # episode_index in the dataset
    length: int  # number of frames
    fps: int  # frames per second
    task: str  # task string(s) recorded with the episode
    videos: tuple[VideoSegment, ...]  # one per available view, in CAMERA_ROLES order
    data_path: Path  # parquet file holding its state and action
    # Where each declared camera's video of the episode sits (camera, chunk, file, start s), whether
    # its file is on disk and mapped onto a view or not: what the fingerprint hashes.
    video_offsets: tuple[tuple[str, int, int, float], ...] = ()

    @property
    def duration_s(self) -> float:
        """Duration from the first to the last frame, seconds."""
        return (self.length - 1) / self.fps

    @property
    def views(self) -> tuple[str, ...]:
        """Available camera views."""
        return tuple(v.view for v in self.videos)

    def video(self, view: str) -> VideoSegment:
        """The segment of one view.

        Raises:
            DatasetReadError: The dataset has no such view.
        """
        for segment in self.videos:
            if segment.view == view:
                return segment
        raise DatasetReadError(f"episode {self.index} has no '{view}' video; available: {list(self.views)}")


@dataclass(frozen=True)
class EpisodeSignals:
    """State and action of one episode, frame by frame."""

    state: np.ndarray  # (length, n) float32; joint degrees, grippers 0..100 % open
    action: np.ndarray  # (length, n) float32; same names as state
    names: tuple[str, ...]  # per-column names, e.g. "left_gripper.pos"
    fps: int  # frames per second
    arms: Mapping[Side, str] | None = None  # arm -> prefix of its names ("left_"; "" single-arm); None: from names

    def __post_init__(self) -> None:
        """Find the arms from the names when not given."""
        if self.arms is None:
            object.__setattr__(self, "arms", arm_prefixes(self.names))

    def column(self, name: str) -> int:
        """Column index of a feature name, e.g. `left_gripper.pos`."""
        return self.names.index(name)

    def joint_column(self, side: Side, joint: str) -> int:
        """Column index of one arm's joint, e.g. (LEFT, "gripper")."""
        return self.names.index(f"{self.arms[side]}{joint}.pos")


class DatasetSource:
    """An opened dataset: metadata is read once; signals are read per data file, cached, thread-safe."""

    def __init__(
        self,
        root: Path,
        dataset_id: str,
        fps: int,
        names: tuple[str, ...],
        episodes: tuple[EpisodeRecord, ...],
        revision: str,
        cameras: tuple[str, ...] = (),
        missing_videos: tuple[Path, ...] = (),
        *,
        reader: DatasetReader,
    ) -> None:
        """Use `open_dataset` instead of calling this directly."""
        self.root = root
        self.dataset_id = dataset_id
        self.fps = fps
        self.names = names
        self.arms = arm_prefixes(names)
        self.episodes = episodes
        self.revision = revision
        self.cameras = cameras  # every camera the dataset declares, by its own name
        self.missing_videos = missing_videos  # declared video files that are not on disk (left out of `videos`)
        self._reader = reader  # reads the data files, each once, thread-safe (the judge's workers share it)

    def episode(self, index: int) -> EpisodeRecord:
        """The record of one episode.

        Raises:
            DatasetReadError: No such episode.
        """
        for ep in self.episodes:
            if ep.index == index:
                return ep
        raise DatasetReadError(
            f"dataset {self.root} has no episode {index}; it holds episodes 0..{len(self.episodes) - 1}"
        )

    def signals(self, episode: EpisodeRecord) -> EpisodeSignals:
        """State and action arrays of an episode (rows ordered by frame index).

        Raises:
            DatasetReadError: its data file cannot be read, or holds other rows or widths than the metadata says.
        """
        with _reading():
            columns = self._reader.signals(self._reader.entry(episode.index))
        return EpisodeSignals(
            state=columns.state,
            action=columns.action,
            names=self.names,
            fps=self.fps,
            arms=self.arms,
        )

    def timestamps(self, episode: EpisodeRecord) -> tuple[np.ndarray, np.ndarray]:
        """(frame_index, timestamp in s) of the episode's rows as stored, unchecked (the health view checks them).

        Raises:
            DatasetReadError: its data file cannot be read.
        """
        with _reading():
            return self._reader.timestamps(self._reader.entry(episode.index))

    def fingerprint(self, episode: EpisodeRecord) -> str:
        """Content hash of an episode (metadata and signals), stable when other episodes are appended."""
        signals = self.signals(episode)
        offsets = episode.video_offsets
        h = hashlib.sha256()
        meta = {
            "index": episode.index,
            "length": episode.length,
            "fps": episode.fps,
            "task": episode.task,
            "videos": [[camera, chunk, file, round(start_s, 6)] for camera, chunk, file, start_s in offsets],
        }
        h.update(json.dumps(meta, sort_keys=True).encode())
        h.update(np.ascontiguousarray(signals.state, dtype=np.float32).tobytes())
        h.update(np.ascontiguousarray(signals.action, dtype=np.float32).tobytes())
        return h.hexdigest()[:24]

    def content_fingerprint(self, episode: EpisodeRecord) -> str:
        """Hash of what an episode holds (length, rate, task, state, action), wherever it sits in whichever dataset.

        `fingerprint` also hashes the episode's index and video offsets, so a record made on it goes
        stale when an edit moves it; this one is the same for an episode carried whole into a curated
        dataset, which is how its scores follow it (evaluation/carry.py).
        """
        signals = self.signals(episode)
        h = hashlib.sha256()
        meta = {"length": episode.length, "fps": episode.fps, "task": episode.task}
        h.update(json.dumps(meta, sort_keys=True).encode())
        h.update(np.ascontiguousarray(signals.state, dtype=np.float32).tobytes())
        h.update(np.ascontiguousarray(signals.action, dtype=np.float32).tobytes())
        return h.hexdigest()[:24]


def open_dataset(root: Path, dataset_id: str | None = None, views: Mapping[str, str] | None = None) -> DatasetSource:
    """Open a local LeRobot v3.0 dataset for reading.

    A dataset without our camera names (or without its video files) opens: its signals are all the
    heuristic scorer and the traces need. Whoever needs pictures checks `episode.views` and
    `missing_videos` (the LLM judge refuses, the review page shows traces alone).

    Args:
        root: Dataset folder (the one holding `meta/info.json`).
        dataset_id: Name recorded in the evaluation store; default: the folder name.
        views: Our view -> the dataset's camera (`view_map.view_map` of `--dataset.views`).

    Raises:
        DatasetReadError: The folder is not a readable v3.0 dataset, lacks state or action, or the
            view map names a camera it does not have.
    """
    with _reading():
        reader = open_reader(root)
    for key, declared in ((STATE_KEY, reader.state_names), (ACTION_KEY, reader.action_names)):
        if declared is None:
            raise DatasetReadError(
                f"{reader.root} has no '{key}' feature; the judge needs joint state and actions."
                " Next: pass a dataset so101-record wrote, --dataset.root=<folder>"
            )
    names = reader.state_names or ()
    cameras = tuple(reader.cameras)
    mapped = resolve_views(views or {}, set(cameras), reader.root)
    missing: set[Path] = set()
    episodes = tuple(_episode_record(entry, mapped, missing) for entry in reader.episodes)
    log.debug("opened %s: %d episodes, views %s, revision %s", reader.root, len(episodes), mapped, reader.revision)
    return DatasetSource(
        reader.root,
        dataset_id or reader.root.name,
        reader.fps,
        names,
        episodes,
        reader.revision,
        cameras,
        tuple(sorted(missing)),
        reader=reader,
    )


def arm_prefixes(names: tuple[str, ...]) -> dict[Side, str]:
    """The SO-101 arms whose six joints `names` holds -> their name prefix.

    Ours are bimanual (`left_shoulder_pan.pos`, ...); a single-arm LeRobot dataset names its joints
    bare (`shoulder_pan.pos`), and reads as the left arm, as `so101-replay --joint_map=left` plays it.
    Names of another robot give no arms: the heuristic has nothing to read, the traces still show.
    """
    joints = (*BODY_JOINTS, GRIPPER)
    arms = {side: f"{side.value}_" for side in Side if all(f"{side.value}_{j}.pos" in names for j in joints)}
    if not arms and all(f"{j}.pos" in names for j in joints):
        arms = {Side.LEFT: ""}
    return arms


def _episode_record(entry: EpisodeEntry, views: Mapping[str, str], missing: set[Path]) -> EpisodeRecord:
    files = {video.camera: video for video in entry.videos}
    # Our own camera names first, in CAMERA_ROLES order: the order the fingerprint always hashed them in.
    ordered = sorted(files, key=lambda c: (CAMERA_ROLES.index(c) if c in CAMERA_ROLES else len(CAMERA_ROLES), c))
    offsets = tuple((c, files[c].chunk_index, files[c].file_index, files[c].from_timestamp_s) for c in ordered)
    absent = {video.path for video in entry.videos if not video.path.is_file()}  # shared without videos: signals read
    missing.update(absent)
    return EpisodeRecord(
        index=entry.index,
        length=entry.length,
        fps=entry.fps,
        task=entry.task,
        videos=tuple(
            VideoSegment.of(view, files[camera]) for view, camera in views.items() if files[camera].path not in absent
        ),
        data_path=entry.data_path,
        video_offsets=offsets,
    )


@contextmanager
def _reading() -> Iterator[None]:
    """The reader's error as the evaluation layer's own, with the same message (callers catch DatasetReadError)."""
    try:
        yield
    except UnreadableDatasetError as e:
        raise DatasetReadError(str(e)) from e
