"""A LeRobot v3.0 dataset as a replay sees it: metadata, per-episode signals and where its videos are.

    locate(repo_id, root)  -> the dataset folder (on disk; downloaded from the hub only when online)
    open_dataset(folder)   -> ReplayDataset (format, features and video files checked, nothing decoded)
    dataset.load(episode)  -> EpisodeData (actions, states, task, one CameraVideo per camera)

The dataset is read by the dataset package's one reader (teleop/dataset/reader.py): this module
keeps the replay's own views of its records, opens each video file once to check it (the reader
decodes nothing), and re-raises the reader's `UnreadableDatasetError` as `DatasetFormatError` with
the same message. Every problem names the file and the next step, before anything moves.
"""

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path

import av
import numpy as np

from policies.replay.errors import DatasetFormatError, ReplayOptionError, VideoError
from robot.lerobot_edge import lerobot_home
from teleop.dataset.errors import UnreadableDatasetError
from teleop.dataset.lerobot_format import download, hub_offline
from teleop.dataset.reader import CameraFile, DatasetReader, EpisodeEntry, open_reader
from teleop.dataset.vocabulary import ACTION_KEY, IMAGE_PREFIX

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

    @classmethod
    def of(cls, video: CameraFile) -> "CameraVideo":
        """The replay's view of the reader's record."""
        return cls(video.camera, video.path, video.from_timestamp_s, video.to_timestamp_s, video.height, video.width)


@dataclass(frozen=True)
class EpisodeInfo:
    """One episode as the metadata describes it."""

    index: int  # episode_index
    length: int  # frames
    task: str  # the task text ("; "-joined when several)
    data_path: Path  # the parquet file with its rows
    videos: tuple[CameraVideo, ...]  # one per video camera, in feature order

    @classmethod
    def of(cls, entry: EpisodeEntry) -> "EpisodeInfo":
        """The replay's view of the reader's record."""
        videos = tuple(CameraVideo.of(video) for video in entry.videos)
        return cls(index=entry.index, length=entry.length, task=entry.task, data_path=entry.data_path, videos=videos)


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
    # What reads the signals (None: built by hand, e.g. in a test, with nothing to load).
    reader: DatasetReader | None = field(default=None, repr=False, compare=False)

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
        if self.reader is None:
            raise DatasetFormatError(
                f"{self.root}: this ReplayDataset was built by hand and has no reader of its files."
                " Next: open it with policies.replay.dataset.open_dataset(<folder>)"
            )
        try:
            columns = self.reader.signals(self.reader.entry(index))
        except UnreadableDatasetError as e:
            raise DatasetFormatError(str(e)) from e
        return EpisodeData(info=info, actions=columns.action, states=columns.state)


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
    try:
        reader = open_reader(root, repo_id, videos=False)  # videos: checked below, each file opened
    except UnreadableDatasetError as e:
        raise DatasetFormatError(str(e)) from e
    if reader.action_names is None:
        raise DatasetFormatError(
            f"{reader.root} has no '{ACTION_KEY}' feature; a replay needs the recorded actions."
            " Next: pass a dataset so101-record wrote, --dataset.root=<folder>"
        )
    episodes = tuple(EpisodeInfo.of(entry) for entry in reader.episodes)
    missing: list[str] = []
    try:
        _check_videos(episodes)
    except VideoError:
        if need_videos:
            raise
        episodes, missing = _without_bad_videos(episodes)
    return ReplayDataset(
        root=reader.root,
        repo_id=reader.repo_id,
        fps=reader.fps,
        robot_type=reader.robot_type,
        action_names=reader.action_names,
        state_names=reader.state_names,
        cameras=dict(reader.cameras),
        episodes=episodes,
        missing_videos=tuple(missing),
        reader=reader,
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
