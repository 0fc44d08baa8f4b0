"""Reading a LeRobot v3.0 dataset for a replay: metadata, per-episode signals and where its videos are.

    locate(repo_id, root)  -> the dataset folder (on disk; downloaded from the hub only when online)
    open_dataset(folder)   -> ReplayDataset (format, features and video files checked, nothing decoded)
    dataset.load(episode)  -> EpisodeData (actions, states, task, one CameraVideo per camera)

LeRobot's metadata reader (`LeRobotDatasetMetadata`) reads info.json and the episode index; the data
parquet files are read here with pyarrow, one episode's rows at a time. Every problem becomes a
`DatasetFormatError` or `VideoError` that names the file and the next step, before anything moves.
"""

import json
import logging
from dataclasses import dataclass, replace
from pathlib import Path

import av
import numpy as np
import pyarrow.parquet as pq

from policies.replay.errors import DatasetFormatError, ReplayOptionError, VideoError
from robot.lerobot_edge import lerobot_home
from teleop.dataset.format_check import format_problem
from teleop.dataset.lerobot_format import download, hub_offline, read_metadata
from teleop.dataset.vocabulary import ACTION_KEY, IMAGE_PREFIX, STATE_KEY, camera_key

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CameraVideo:
    """Where one camera of one episode lives inside a (shared) MP4 file."""

    name: str  # camera name, e.g. "overhead" (feature observation.images.overhead)
    path: Path  # the MP4 file
    from_s: float  # the episode's first frame inside the file, s
    to_s: float  # the episode's end inside the file, s
    height: int  # px, as info.json declares
    width: int  # px


@dataclass(frozen=True)
class EpisodeInfo:
    """One episode as the metadata describes it."""

    index: int  # episode_index
    length: int  # frames
    task: str  # the task text ("; "-joined when several)
    data_path: Path  # the parquet file with its rows
    videos: tuple[CameraVideo, ...]  # one per video camera, in feature order


@dataclass(frozen=True)
class EpisodeData:
    """One episode's recorded signals, in the dataset's column order."""

    info: EpisodeInfo
    actions: np.ndarray  # float32 (length, action dims)
    states: np.ndarray | None  # float32 (length, state dims), None when the dataset has no state


@dataclass(frozen=True)
class ReplayDataset:
    """An opened dataset: checked metadata, no data read yet."""

    root: Path
    repo_id: str
    fps: int  # frames per second it was recorded at
    robot_type: str | None
    action_names: tuple[str, ...]  # names of the action columns, e.g. left_shoulder_pan.pos
    state_names: tuple[str, ...] | None  # names of the state columns, None without a state feature
    cameras: dict[str, tuple[int, int]]  # video camera name -> (height, width) px
    episodes: tuple[EpisodeInfo, ...]
    # Video files missing or unreadable, each in words, when the replay needs no video (actions only):
    # their episodes carry no such video (the report's stills then show the commanded pose alone).
    missing_videos: tuple[str, ...] = ()

    def episode(self, index: int) -> EpisodeInfo:
        """The metadata of one episode.

        Raises:
            ReplayOptionError: no such episode.
        """
        for info in self.episodes:
            if info.index == index:
                return info
        last = self.episodes[-1].index if self.episodes else -1
        raise ReplayOptionError(f"episode {index}: {self.root} holds episodes 0..{last}; pick one of those")

    def load(self, index: int) -> EpisodeData:
        """The recorded actions (and states) of one episode.

        Raises:
            DatasetFormatError: its rows are missing or their widths differ from info.json.
        """
        info = self.episode(index)
        columns = [ACTION_KEY, "episode_index", "frame_index"] + ([STATE_KEY] if self.state_names else [])
        try:
            table = pq.read_table(info.data_path, columns=columns)
        except (OSError, KeyError, ValueError) as e:
            raise DatasetFormatError(
                f"cannot read {info.data_path}: {e}. Next: check the dataset was finalized (so101-record repairs"
                " an interrupted one), or download it again"
            ) from e
        episodes = table.column("episode_index").to_numpy()
        rows = np.flatnonzero(episodes == info.index)
        rows = rows[np.argsort(table.column("frame_index").to_numpy()[rows], kind="stable")]
        if len(rows) != info.length:
            raise DatasetFormatError(
                f"episode {info.index}: {info.data_path} holds {len(rows)} rows, the metadata says {info.length}."
                " Next: repair or re-download the dataset"
            )
        actions = _matrix(table, ACTION_KEY, rows, len(self.action_names), info.data_path)
        states = _matrix(table, STATE_KEY, rows, len(self.state_names), info.data_path) if self.state_names else None
        return EpisodeData(info=info, actions=actions, states=states)


def _matrix(table: object, key: str, rows: np.ndarray, width: int, path: Path) -> np.ndarray:
    column = table.column(key).combine_chunks()  # type: ignore[attr-defined]
    values = np.asarray(column.flatten().to_numpy(zero_copy_only=False), dtype=np.float32)
    if len(column) == 0 or values.size % len(column) != 0 or values.size // len(column) != width:
        found = values.size // max(len(column), 1)
        raise DatasetFormatError(
            f"{path}: '{key}' holds {found} values per frame, but info.json declares {width}."
            " Next: the dataset's metadata and data disagree; re-export it"
        )
    return values.reshape(len(column), width)[rows]


def locate(repo_id: str | None, root: Path | None) -> Path:
    """The dataset folder: `root`, else $HF_LEROBOT_HOME/<repo_id>, else downloaded (online only).

    Raises:
        ReplayOptionError: neither given, or the dataset is not on disk and the hub is off limits.
        DatasetFormatError: the download failed.
    """
    if root is not None:
        return Path(root).expanduser()
    if not repo_id:
        raise ReplayOptionError("no dataset: pass --dataset.root=<folder> or --dataset.repo_id=<user>/<name>")
    local = lerobot_home() / repo_id
    if (local / "meta" / "info.json").is_file():
        return local
    if hub_offline():
        raise ReplayOptionError(
            f"dataset {repo_id} is not on disk at {local} and the hub is off (HF_HUB_OFFLINE=1). Next: download it"
            f" while online (hf download {repo_id} --repo-type=dataset --local-dir={local}), or pass"
            " --dataset.root=<folder>"
        )
    logger.info("downloading %s from the hub into %s", repo_id, local)
    try:
        download(repo_id, local)
    except Exception as e:  # network, authentication, a missing repo: all end the same way
        raise DatasetFormatError(
            f"cannot download dataset {repo_id} from the hub: {type(e).__name__}: {e}. Next: check the id and your"
            " network (a private dataset needs `hf auth login`), or pass --dataset.root=<folder>"
        ) from e
    return local


def open_dataset(root: Path, repo_id: str | None = None, *, need_videos: bool = True) -> ReplayDataset:
    """Open a dataset folder, checking its format version, features and video files.

    `need_videos=False` (a replay of the recorded actions): a missing or unreadable video is noted in
    `missing_videos` and left out of its episodes instead of refused.

    Raises:
        DatasetFormatError: not a v3.0 dataset, unreadable metadata, or inconsistent features (also a
            camera whose video frames differ in size from its declared shape).
        VideoError: a video file is missing or cannot be opened.
    """
    root = Path(root).expanduser().resolve()
    info = _read_info(root)
    if (problem := format_problem(root, repo_id, videos=False)) is not None:  # videos: checked below
        raise DatasetFormatError(problem)
    features = info.get("features") or {}
    action_names = _names(features, ACTION_KEY, root, required=True)
    state_names = _names(features, STATE_KEY, root, required=False) if STATE_KEY in features else None
    cameras = {
        key.removeprefix(IMAGE_PREFIX): _image_shape(key, ft, root)
        for key, ft in features.items()
        if key.startswith(IMAGE_PREFIX) and ft.get("dtype") == "video"
    }
    name = repo_id or f"local/{root.name}"
    try:
        meta = read_metadata(root, name)
    except Exception as e:  # LeRobot raises many kinds for broken metadata (and hub errors for missing files)
        raise DatasetFormatError(
            f"cannot read the metadata of {root}: {type(e).__name__}: {e}. Next: check meta/ is complete"
            " (a dataset copied while recording, or never finalized, is not)"
        ) from e
    if meta.episodes is None or meta.total_episodes == 0:
        raise DatasetFormatError(f"{root} holds no saved episodes. Next: record some with so101-record")
    rows = list(meta.episodes)
    episodes = tuple(_episode(root, meta, row, cameras) for row in rows)
    missing: list[str] = []
    try:
        _check_videos(episodes)
    except VideoError:
        if need_videos:
            raise
        episodes, missing = _without_bad_videos(episodes)
    return ReplayDataset(
        root=root,
        repo_id=name,
        fps=int(info.get("fps", meta.fps)),
        robot_type=info.get("robot_type"),
        action_names=action_names,
        state_names=state_names,
        cameras=cameras,
        episodes=episodes,
        missing_videos=tuple(missing),
    )


def _read_info(root: Path) -> dict:
    path = root / "meta" / "info.json"
    if not path.is_file():
        raise DatasetFormatError(
            f"{root} is not a LeRobot dataset (no meta/info.json). Next: pass the folder so101-record wrote"
            " (--dataset.root=<folder>), or a hub id with --dataset.repo_id"
        )
    try:
        info = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise DatasetFormatError(f"cannot read {path}: {e}. Next: restore the file from a copy of the dataset") from e
    if not isinstance(info, dict):
        raise DatasetFormatError(f"{path} must hold a JSON object. Next: restore the file from a copy of the dataset")
    return info


def _names(features: dict, key: str, root: Path, *, required: bool) -> tuple[str, ...]:
    feature = features.get(key)
    if feature is None:
        raise DatasetFormatError(f"{root} has no '{key}' feature; a replay needs the recorded actions")
    shape = tuple(feature.get("shape") or ())
    names = feature.get("names")
    if isinstance(names, dict):  # older exports keep names under one axis key
        names = next(iter(names.values()), None)
    if len(shape) != 1 or shape[0] < 1:
        raise DatasetFormatError(
            f"{root}: feature '{key}' has shape {list(shape)}; expected one axis of joint values, e.g. [12]."
            " Next: this is not a joint-space dataset so101-replay can drive"
        )
    if names is None:
        return tuple(f"{key}[{i}]" for i in range(shape[0]))
    names = tuple(str(n) for n in names)
    if len(names) != shape[0]:
        raise DatasetFormatError(
            f"{root}: feature '{key}' has shape {list(shape)} but {len(names)} names ({', '.join(names)})."
            " Next: fix meta/info.json (the shape must count the names)"
        )
    return names


def _image_shape(key: str, feature: dict, root: Path) -> tuple[int, int]:
    shape = tuple(feature.get("shape") or ())
    names = feature.get("names") or ["height", "width", "channels"]
    if len(shape) != 3:
        raise DatasetFormatError(f"{root}: camera feature '{key}' has shape {list(shape)}; expected [height, width, 3]")
    axes = dict(zip(names, shape, strict=False))
    height, width, channels = (
        axes.get("height", shape[0]),
        axes.get("width", shape[1]),
        axes.get("channels", shape[2]),
    )
    if channels != 3:
        raise DatasetFormatError(
            f"{root}: camera feature '{key}' has shape {list(shape)} ({channels} channels); expected 3 (RGB)."
            " Next: fix meta/info.json, or re-record the dataset"
        )
    return int(height), int(width)


def _episode(root: Path, meta: object, row: dict, cameras: dict[str, tuple[int, int]]) -> EpisodeInfo:
    index = int(row["episode_index"])
    videos = []
    for name, (height, width) in cameras.items():
        key = camera_key(name)
        try:
            path = root / meta.get_video_file_path(index, key)  # type: ignore[attr-defined]
            start, end = float(row[f"videos/{key}/from_timestamp"]), float(row[f"videos/{key}/to_timestamp"])
        except (KeyError, IndexError, TypeError) as e:
            raise DatasetFormatError(
                f"{root}: the episode index has no video entry for camera '{name}' of episode {index} ({e})."
                " Next: repair or re-download the dataset"
            ) from e
        videos.append(CameraVideo(name, path, start, end, height, width))
    tasks = row.get("tasks") or []
    return EpisodeInfo(
        index=index,
        length=int(row["length"]),
        task="; ".join(str(t) for t in tasks) if isinstance(tasks, list) else str(tasks),
        data_path=root / meta.get_data_file_path(index),  # type: ignore[attr-defined]
        videos=tuple(videos),
    )


def _without_bad_videos(episodes: tuple[EpisodeInfo, ...]) -> tuple[tuple[EpisodeInfo, ...], list[str]]:
    """The episodes with every video that fails `_check_videos` left out, and each such file's problem."""
    bad: dict[Path, str] = {}
    for episode in episodes:
        for video in episode.videos:
            if video.path in bad:
                continue
            try:
                _check_videos((replace(episode, videos=(video,)),))
            except VideoError as e:
                bad[video.path] = str(e).split(". Next:")[0]
    kept = tuple(replace(e, videos=tuple(v for v in e.videos if v.path not in bad)) for e in episodes)
    return kept, list(bad.values())


def _check_videos(episodes: tuple[EpisodeInfo, ...]) -> None:
    """Every video file exists, opens as a video, and has the frame size info.json declares.

    Its frames are decoded later, when needed; a size mismatch found only then would surface after
    the replay (in the report's stills) or stop a policy run midway.
    """
    seen: set[Path] = set()
    for episode in episodes:
        for video in episode.videos:
            if video.path in seen:
                continue
            seen.add(video.path)
            if not video.path.is_file():
                raise VideoError(
                    f"camera '{video.name}': the video file {video.path} is missing (episode {episode.index} needs"
                    " it). Next: restore the dataset's videos/ folder, or download the dataset again"
                )
            try:
                with av.open(str(video.path)) as container:
                    streams = container.streams.video
                    size = (streams[0].codec_context.height, streams[0].codec_context.width) if streams else None
            except av.error.FFmpegError as e:
                raise VideoError(
                    f"camera '{video.name}': cannot open {video.path} ({e}); the file is corrupt."
                    " Next: restore it from a copy of the dataset, or download the dataset again"
                ) from e
            if size is None:
                raise VideoError(
                    f"camera '{video.name}': {video.path} holds no video stream; the file is corrupt."
                    " Next: restore it from a copy of the dataset, or download the dataset again"
                )
            if size != (video.height, video.width):
                raise DatasetFormatError(
                    f"camera '{video.name}': meta/info.json declares {video.width}x{video.height} frames"
                    f" (feature {IMAGE_PREFIX}{video.name}), but {video.path} holds {size[1]}x{size[0]}."
                    f" Next: fix that feature's shape in meta/info.json to [{size[0]}, {size[1]}, 3], or re-encode"
                    " the video"
                )
