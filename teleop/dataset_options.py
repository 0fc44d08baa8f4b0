"""Where and how a command writes its dataset: the options so101-record and so101-deploy share.

writer = dataset_writer(config.dataset, config.rig)    # the writer process, not yet forked
report = writer.open()                                  # create, or repair and resume
...                                                     # connect the rig, record
close_dataset(writer, report, stops)                    # a new dataset left empty is removed

A first run that fails (a missing calibration, an unplugged camera) leaves no empty dataset behind,
so the same command works once the cause is fixed; `--dataset.resume=true` on a folder that holds
no dataset is refused before anything is written.
"""

import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robot.cameras.shape import camera_shapes
from robot.config import RigConfig
from robot.errors import ConfigError
from robot.lerobot_edge import lerobot_home
from robot.signals import StopSignals
from teleop.dataset.errors import JournalCorruptError, NoDatasetToResumeError
from teleop.dataset.journal import holds_dataset, read_journal
from teleop.dataset.lerobot_format import push_to_hub
from teleop.dataset.results import OpenReport
from teleop.dataset.writer_process import DatasetWriter, WriterSpec

logger = logging.getLogger(__name__)

CODECS = ("libsvtav1", "h264")


@dataclass(frozen=True)
class DatasetConfig:
    """Where and how the dataset is written."""

    repo_id: str = "local/so101_fold"  # LeRobot dataset id, "<user>/<name>"
    root: Path | None = None  # the dataset folder; default $HF_LEROBOT_HOME/<repo_id>
    vcodec: str = "libsvtav1"  # video codec: libsvtav1 (LeRobot's default, smaller) or h264 (less CPU)
    resume: bool = False  # add episodes to an existing dataset (its fps, cameras and features must match)
    push_to_hub: bool = False  # upload to the Hugging Face Hub when done (needs a login and a network)

    def __post_init__(self) -> None:
        if self.repo_id.count("/") != 1 or not all(self.repo_id.split("/")):
            raise ConfigError(f"dataset.repo_id={self.repo_id!r}: expected '<user>/<name>', e.g. me/fold_cloth")
        if self.vcodec not in CODECS:
            raise ConfigError(f"dataset.vcodec={self.vcodec!r}: expected one of {', '.join(CODECS)}")

    def folder(self) -> Path:
        """The dataset's folder on disk."""
        if self.root is not None:
            return Path(self.root)
        return lerobot_home() / self.repo_id


def dataset_writer(dataset: DatasetConfig, rig: RigConfig, *, intervention: bool = False) -> DatasetWriter:
    """The writer of `dataset` for the rig's cameras at the rig's rate (open() it to start).

    `intervention`: record LeRobot's `intervention` feature (rollouts a person may correct).

    Raises:
        NoDatasetToResumeError: resume was asked for, and the folder holds no dataset (nothing is created).
    """
    if dataset.resume and not holds_dataset(dataset.folder()):
        raise NoDatasetToResumeError(
            f"--dataset.resume=true, but {dataset.folder()} holds no dataset; nothing was created. Next: drop"
            " --dataset.resume=true to start a new dataset there, or pass --dataset.root=<the dataset's folder>"
        )
    cameras = camera_shapes(rig.cameras)
    spec = WriterSpec(
        root=dataset.folder(),
        repo_id=dataset.repo_id,
        fps=rig.fps,
        cameras=cameras,
        vcodec=dataset.vcodec,
        resume=dataset.resume,
        intervention=intervention,
    )
    return DatasetWriter(spec)


def close_dataset(writer: DatasetWriter, opened: OpenReport, stops: StopSignals) -> bool:
    """Close the writer; remove the dataset if this run created it and saved no episode into it.

    A second signal during the close leaves a save in progress to the writer process. Returns whether
    the dataset was removed. The journal on disk decides, not this process's count: only a dataset
    whose journal says "committed, 0 episodes" is removed (an interrupted first save is kept, and
    rolled back by the next `--dataset.resume=true`).
    """
    with stops.finishing():
        writer.close()
    if not opened.created:
        return False
    try:
        journal = read_journal(opened.root)
    except JournalCorruptError:
        return False
    if journal is None or journal.committing or journal.episodes:
        return False
    shutil.rmtree(opened.root)
    logger.info("removed %s: this run created it and saved no episode", opened.root)
    return True


def upload_if_asked(dataset: DatasetConfig, stops: StopSignals, removed: bool) -> bool:
    """Upload the dataset when `--dataset.push_to_hub=true` asked for it and the run ended by itself.

    A stop signal means no upload either, and a dataset removed as empty has nothing to upload.
    Returns whether it was uploaded.

    Raises:
        HubUploadError: the hub is off here or the upload failed (the dataset stays saved on disk).
    """
    if not dataset.push_to_hub or stops.signum is not None or removed:
        return False
    push_to_hub(dataset.repo_id, dataset.folder())
    return True


class NoDataset:
    """A writer that keeps nothing: the episodes run, none is saved (so101-deploy --record=false)."""

    longest_save_s = 5.0  # a save writes nothing and returns at once; ample for its thread to end

    def __init__(self) -> None:
        self._episodes = 0

    def begin_episode(self, task: str) -> int:
        """Number the episode as a dataset would."""
        self._episodes += 1
        return self._episodes - 1

    def add_frame(self, *args: Any) -> bool:
        """Take the frame and keep nothing of it."""
        return True

    def save_episode(self, quality: dict) -> None:
        """Nothing to save."""
        return None

    def discard_episode(self) -> None:
        """Nothing to discard."""
        return None
