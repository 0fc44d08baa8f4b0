"""LeRobot's dataset tools as a curation uses them: whole episodes through `dataset_tools`, cut ones its writer.

LeRobot 0.6.1's `lerobot.datasets.dataset_tools` drops, splits and merges whole episodes (copying
the video segments it can, re-encoding with the source's own encoder settings where a file mixes
kept and dropped episodes). It cannot cut frames out of an episode: a curation with a trim writes
every kept episode through LeRobot's writer instead (`LeRobotDataset.create`, `add_frame`,
`save_episode`, with our encoder that never drops a frame: lerobot_adapter.py), frames decoded from
the source's videos in slices and encoded with the source's encoder settings, so the new dataset is
one LeRobot wrote in every file.

The heavy LeRobot modules are imported when called, so reading so101-edit's options stays quick.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from teleop.dataset.curate.errors import CurationError
from teleop.dataset.curate.plan import Curation, Kept
from teleop.dataset.vocabulary import STATE_KEY

DECODE_SLICE_FRAMES = 64  # frames decoded at once per camera: memory stays flat however long an episode is
Progress = Callable[[int, int], None]  # (frames written, frames in all)


@dataclass(frozen=True)
class SourceFacts:
    """What a curation needs to know of a source dataset before it writes anything."""

    root: Path
    repo_id: str
    fps: int
    lengths: tuple[int, ...]  # frames of each episode, by index
    state_names: tuple[str, ...]  # observation.state's columns ("" when it has none)
    video_keys: tuple[str, ...]
    image_keys: tuple[str, ...]  # frames kept as image files, not videos


def read_source(root: Path, repo_id: str) -> SourceFacts:
    """The source's episodes and features, from its metadata (no frame is read)."""
    from lerobot.datasets.dataset_metadata import LeRobotDatasetMetadata

    meta = LeRobotDatasetMetadata(repo_id, root=root)
    lengths = tuple(int(meta.episodes[i]["length"]) for i in range(meta.total_episodes))
    state = meta.features.get(STATE_KEY) or {}
    return SourceFacts(
        Path(root),
        repo_id,
        int(meta.fps),
        lengths,
        tuple(state.get("names") or ()),
        tuple(meta.video_keys),
        tuple(meta.image_keys),
    )


def episode_states(root: Path, index: int) -> np.ndarray:
    """One episode's observation.state rows, in frame order (for the trim a curation proposes)."""
    rows = _episode_rows(root, index, ["frame_index", STATE_KEY])
    return np.stack(rows[STATE_KEY]).astype(np.float32) if rows[STATE_KEY] else np.zeros((0, 0))


def write_whole_episodes(source: SourceFacts, out: Path, repo_id: str, curation: Curation) -> None:
    """The kept episodes, uncut, through LeRobot's `delete_episodes` (nothing is re-encoded but mixed video files)."""
    from lerobot.datasets.dataset_tools import delete_episodes

    if curation.trims:
        raise CurationError("a curation with trims is written frame by frame (write_frames), not by episode")
    with _episodes_files_read_once():
        delete_episodes(_open(source), list(curation.dropped), output_dir=out, repo_id=repo_id)


def split_episodes(source: SourceFacts, out: Path, splits: dict[str, list[int]]) -> dict[str, Path]:
    """Whole episodes into one new dataset per split, at out/<name>, through LeRobot's `split_dataset`."""
    from lerobot.datasets.dataset_tools import split_dataset

    with _episodes_files_read_once():
        written = split_dataset(_open(source), splits, output_dir=out)
    return {name: Path(dataset.root) for name, dataset in written.items()}


def merge_whole_datasets(sources: list[SourceFacts], out: Path, repo_id: str) -> None:
    """Every episode of each source, in order, into one new dataset, through LeRobot's `merge_datasets`."""
    from lerobot.datasets.dataset_tools import merge_datasets

    merge_datasets([_open(s) for s in sources], output_repo_id=repo_id, output_dir=out)


def write_frames(source: SourceFacts, out: Path, repo_id: str, curation: Curation, progress: Progress) -> None:
    """Every kept episode's kept frames through LeRobot's writer, videos decoded and encoded again."""
    from lerobot.configs.video import encoder_config_from_video_info
    from lerobot.utils.constants import DEFAULT_FEATURES

    from teleop.dataset.lerobot_adapter import create_streaming

    if source.image_keys:
        raise CurationError(
            f"{source.root}: its cameras {list(source.image_keys)} are kept as image files, which a trim cannot "
            "rewrite yet; drop whole episodes instead (so101-edit --drop=...)"
        )
    src = _open(source)
    features = {k: v for k, v in src.meta.features.items() if k not in DEFAULT_FEATURES}
    encoder = encoder_config_from_video_info(features[source.video_keys[0]].get("info")) if source.video_keys else None
    dst = create_streaming(out, repo_id, source.fps, features, src.meta.robot_type, encoder)
    tasks = _task_names(src)
    done = 0
    try:
        for kept in curation.kept:
            for frame in _frames(src, source, kept, features, tasks):
                dst.add_frame(frame)
                done += 1
                if done % 16 == 0 or done == curation.frames:
                    progress(done, curation.frames)
            dst.save_episode()
    finally:
        dst.finalize()


@contextmanager
def _episodes_files_read_once() -> Iterator[None]:
    """LeRobot's episode-metadata reader, reading each meta/episodes file once instead of once per episode.

    LeRobot 0.6.1's `delete_episodes` and `split_dataset` copy each kept episode's metadata with
    `_load_episode_with_stats`, which reads the whole meta/episodes parquet file holding it (every
    episode's row and statistics) to take one row: the cost grows with the square of the episodes
    (benchmarks/studio_scale.py: a drop from 500 episodes took 37x the time of one from 50). Within
    this block the file is read once and the same row is returned as LeRobot's own code returns it.
    """
    from lerobot.datasets import dataset_tools

    original = getattr(dataset_tools, "_load_episode_with_stats", None)
    if original is None:  # another LeRobot: its own reader, however it scales
        yield
        return
    files: dict[Path, tuple[Any, dict[int, int]]] = {}

    def load(src_dataset: Any, episode_idx: int) -> dict:
        ep = src_dataset.meta.episodes[episode_idx]
        path = src_dataset.root / dataset_tools.DEFAULT_EPISODES_PATH.format(
            chunk_index=ep["meta/episodes/chunk_index"], file_index=ep["meta/episodes/file_index"]
        )
        if path not in files:
            frame = dataset_tools.pd.read_parquet(path)
            files[path] = (frame, {int(e): row for row, e in enumerate(frame["episode_index"])})
        frame, rows = files[path]
        return frame.iloc[rows[episode_idx]].to_dict()

    dataset_tools._load_episode_with_stats = load
    try:
        yield
    finally:
        dataset_tools._load_episode_with_stats = original


def _open(source: SourceFacts) -> Any:
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    return LeRobotDataset(source.repo_id, root=source.root, video_backend="pyav")


def _task_names(dataset: Any) -> dict[int, str]:
    tasks = dataset.meta.tasks
    return {} if tasks is None else {int(row.task_index): str(task) for task, row in tasks.iterrows()}


def _episode_rows(root: Path, index: int, columns: list[str] | None = None) -> dict[str, list]:
    """One episode's rows of data/ parquet, column by column, in frame order."""
    rows: dict[str, list] = {}
    for path in sorted(Path(root).glob("data/*/*.parquet")):
        table = pq.read_table(path, columns=None if columns is None else [*columns, "episode_index"])
        episodes = table.column("episode_index").to_numpy()
        if not (episodes == index).any():
            continue
        part = table.filter(episodes == index).to_pydict()
        for name, values in part.items():
            rows.setdefault(name, []).extend(values)
    if not rows:
        return {name: [] for name in columns or []}
    order = np.argsort(rows["frame_index"], kind="stable")
    return {name: [values[i] for i in order] for name, values in rows.items()}


def _frames(src: Any, source: SourceFacts, kept: Kept, features: dict, tasks: dict[int, str]) -> Iterator[dict]:
    """The kept frames of one episode, as `add_frame` takes them (images HWC uint8)."""
    rows = _episode_rows(source.root, kept.source_index)
    plain = [k for k in features if k not in source.video_keys]
    episode = src.meta.episodes[kept.source_index]
    for start in range(kept.span.start, kept.span.stop, DECODE_SLICE_FRAMES):
        stop = min(kept.span.stop, start + DECODE_SLICE_FRAMES)
        images = {key: _decode(src, episode, key, rows["timestamp"][start:stop]) for key in source.video_keys}
        for i, frame_index in enumerate(range(start, stop)):
            frame: dict[str, Any] = {"task": tasks.get(int(rows["task_index"][frame_index]), "")}
            for key in plain:
                dtype = features[key]["dtype"]
                frame[key] = np.asarray(rows[key][frame_index], dtype=dtype).reshape(features[key]["shape"])
            for key, stack in images.items():
                frame[key] = stack[i]
            yield frame


def _decode(src: Any, episode: dict, key: str, timestamps: list[float]) -> np.ndarray:
    """Frames of one camera at the episode's `timestamps`, HWC uint8."""
    from lerobot.datasets.video_utils import decode_video_frames

    path = src.root / src.meta.get_video_file_path(int(episode["episode_index"]), key)
    offset = float(episode[f"videos/{key}/from_timestamp"])
    frames = decode_video_frames(path, [offset + t for t in timestamps], src.tolerance_s, "pyav", return_uint8=True)
    return frames.permute(0, 2, 3, 1).numpy()
