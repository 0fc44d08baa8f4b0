"""A LeRobot dataset in which a saved episode stays saved, whatever happens next.

    open     lock the root; new: create it in a staging dir and rename it into place;
             existing: check it, reading only (refuse, changing nothing), repair, reopen with LeRobot
    episode  begin_episode -> add_frame ... -> save_episode | discard_episode
    save     journal "committing N" (+ backups) -> LeRobot save_episode + finalize -> count the
             video frames -> sidecars -> fsync -> journal "committed N+1"; any failure in between
             (a video with fewer frames than the episode too) rolls back to N
    next     reopen with LeRobotDataset.resume, so episode N+1 lands in new files and the files of
             saved episodes are never written again

LeRobot keeps parquet writers open (no footer) and buffers episode metadata until `finalize()`,
and rewrites info.json/stats.json in place: a crash mid-session leaves a dataset it cannot load.
Finalizing after every episode and journaling the commit is what makes each save durable; the
price is one `resume` per episode (it reloads the episode index), done after the save has
returned (`prepare_next`), while the operator resets the scene.

Not thread-safe: one thread drives a DurableDataset (the writer process's main thread).
"""

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from teleop.dataset import lerobot_adapter as adapter
from teleop.dataset import opening
from teleop.dataset.errors import (
    DatasetError,
    DatasetExistsError,
    FrameError,
    ShortVideoError,
    WriterStateError,
    classify,
)
from teleop.dataset.faults import fault_point
from teleop.dataset.features import INTERVENTION_FACT, check_frame
from teleop.dataset.journal import (
    JournalEntry,
    begin_commit,
    episode_files,
    finish_commit,
    holds_dataset,
    read_journal,
)
from teleop.dataset.lock import DatasetLock
from teleop.dataset.repair import repair
from teleop.dataset.results import OpenReport, SavedEpisode
from teleop.dataset.sidecar import quality_json, write_quality, write_timing
from teleop.dataset.spec import WriterSpec
from teleop.dataset.vocabulary import camera_key

logger = logging.getLogger(__name__)


@dataclass
class _Episode:
    index: int
    task: str
    timing: list[dict[str, float]] = field(default_factory=list)


class DurableDataset:
    """Crash-safe episode writing on top of LeRobotDataset. Create with `DurableDataset.open(spec)`."""

    def __init__(self, spec: WriterSpec, lock: DatasetLock, journal: JournalEntry, report: OpenReport) -> None:
        self.spec = spec
        self.report = report
        self._lock = lock
        self._journal = journal
        self._frames = report.frames
        self._lerobot = None
        self._episode: _Episode | None = None
        self._broken: DatasetError | None = None  # set when a failed save could not be undone

    # --- lifecycle ---------------------------------------------------------------------------

    @classmethod
    def open(cls, spec: WriterSpec) -> "DurableDataset":
        """Create, or repair and resume, the dataset at `spec.root` (blocking: seconds).

        An existing dataset is checked first, reading only (acceptance.py); each refusal below but
        DatasetLockedError leaves it byte-identical.

        Raises:
            DatasetExistsError: it exists and `spec.resume` is False.
            IncompatibleDatasetError: it was recorded with other settings.
            DatasetVersionError: it is in another LeRobot format version (codebase_version).
            ForeignDatasetError: it has no journal of ours (LeRobot or another tool wrote it; adopt.py).
            JournalCorruptError: its journal is unreadable or malformed.
            NotADatasetError, DatasetLockedError, DatasetCorruptError: see their messages.
        """
        root = spec.root
        if holds_dataset(root):
            if not spec.resume:
                raise DatasetExistsError(
                    f"{root} already holds a dataset. Next: add --dataset.resume=true to add episodes to it, or"
                    " choose a new folder with --dataset.root=<folder>"
                )
            lock = DatasetLock(root, spec.lock_timeout_s)
            try:
                journal, info, repaired = opening.recover(spec)
            except BaseException:
                lock.release()
                raise
            report = OpenReport(root, journal.episodes, int(info.get("total_frames", 0)), False, repaired)
        else:
            opening.create(spec)
            lock = DatasetLock(root, spec.lock_timeout_s)
            journal = JournalEntry("committed", 0)
            report = OpenReport(root, 0, 0, True)
        dataset = cls(spec, lock, journal, report)
        try:
            dataset.prepare_next()
        except BaseException:
            lock.release()
            raise
        return dataset

    def close(self) -> None:
        """Discard an unsaved episode, release LeRobot and the lock. Saved episodes need nothing more."""
        if self._episode is not None:
            logger.warning("closing %s with episode %d unsaved: it is discarded", self.spec.root, self._episode.index)
            self.discard_episode()
        if self._lerobot is not None:
            self._lerobot.finalize()  # nothing pending: only stops the encoder threads
            self._lerobot = None
        self._lock.release()

    def __enter__(self) -> "DurableDataset":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def episodes(self) -> int:
        """Saved episodes."""
        return self._journal.episodes

    @property
    def frames(self) -> int:
        """Saved frames."""
        return self._frames

    def prepare_next(self) -> None:
        """Reopen LeRobot for the next episode if the last save closed it (blocking, ~0.1-0.5 s)."""
        if self._broken is not None:
            raise self._broken
        if self._lerobot is None:
            self._lerobot = adapter.open_for_append(self.spec)

    # --- episodes ----------------------------------------------------------------------------

    def begin_episode(self, task: str) -> int:
        """Start an episode for `task`; returns its index."""
        if self._episode is not None:
            raise WriterStateError(f"episode {self._episode.index} is still open. Next: save or discard it first")
        if not task.strip():
            raise FrameError("the task text is empty. Next: say what the demonstration does, e.g. 'Fold the cloth'")
        self.prepare_next()
        self._episode = _Episode(self._journal.episodes, task)
        return self._episode.index

    def add_frame(
        self,
        state: np.ndarray,
        action: np.ndarray,
        images: Mapping[str, np.ndarray],
        timing: Mapping[str, float],
    ) -> None:
        """Append one frame (images are copied; `timing` goes to the sidecar, never to LeRobot).

        Raises:
            FrameError: the frame does not fit the dataset (nothing was recorded).
            EncoderError, DiskFullError: the episode in progress is lost (already discarded).
        """
        episode = self._require_episode("add_frame")
        check_frame(self.spec.cameras, state, action, images)
        try:
            intervention = bool(timing.get(INTERVENTION_FACT, 0.0)) if self.spec.intervention else None
            adapter.add_frame(self._lerobot, state, action, dict(images), episode.task, intervention)
        except Exception as error:
            self.discard_episode()
            raise classify(error, self.spec.root, f"recording episode {episode.index}") from error
        episode.timing.append({str(key): float(value) for key, value in timing.items()})
        fault_point(f"frame:{len(episode.timing)}")

    def discard_episode(self) -> None:
        """Drop the episode in progress (no-op if there is none)."""
        if self._episode is None:
            return
        self._episode = None
        if self._lerobot is not None:
            adapter.discard(self._lerobot)

    def save_episode(self, quality: Mapping | None = None) -> SavedEpisode:
        """Make the episode in progress durable, with its timing facts and quality card.

        Blocks until its files and the journal are fsynced. LeRobot is left closed; `prepare_next`
        (or the next `begin_episode`) reopens it.

        Raises:
            WriterStateError: no episode, or one without frames (discard it instead).
            DiskFullError, EncoderError, DatasetError: the save failed and was rolled back; the
                episodes saved before are intact. ShortVideoError (an EncoderError): a camera's
                video has fewer frames than the episode, so LeRobot would pair frames with the
                wrong images; rolled back too.
        """
        started = time.monotonic()
        episode = self._require_episode("save_episode")
        if not episode.timing:
            raise WriterStateError(f"episode {episode.index} has no frames. Next: discard it instead of saving")
        try:
            card = quality_json(quality or {})
        except (TypeError, ValueError) as error:
            raise FrameError(f"the quality card of episode {episode.index} cannot be saved: {error}") from error
        try:
            committing = begin_commit(self.spec.root, self._journal)
            fault_point("save:journaled")
            self._lerobot.save_episode()
            fault_point("save:lerobot_saved")
            self._lerobot.finalize()
            fault_point("save:finalized")
            counts = self._video_frame_counts(committing)
            _check_videos(self.spec.root, episode.index, len(episode.timing), counts)
            write_timing(self.spec.root, episode.index, episode.timing)
            write_quality(self.spec.root, episode.index, card)
            fault_point("save:sidecars_written")
            waits = adapter.encoder_waits(self._lerobot)
            self._journal = finish_commit(self.spec.root, committing)
        except Exception as error:
            try:
                self._roll_back()
            except Exception as rollback_error:
                self._broken = DatasetError(
                    f"{self.spec.root}: saving episode {episode.index} failed ({error}) and undoing it failed too "
                    f"({rollback_error}). The saved episodes are safe; the next open finishes the repair. "
                    "Next: free disk space if it is full, then restart recording with resume."
                )
                raise self._broken from error
            typed = classify(error, self.spec.root, f"saving episode {episode.index}", self.episodes)
            if typed is error:  # already ours (a short video): not its own cause
                raise
            raise typed from error
        finally:
            self._episode = None
        self._lerobot = None
        fault_point("save:committed")
        frames = len(episode.timing)
        self._frames += frames
        return SavedEpisode(episode.index, frames, 0, 0, waits, time.monotonic() - started)

    # --- internals ---------------------------------------------------------------------------

    def _require_episode(self, call: str) -> _Episode:
        if self._episode is None:
            raise WriterStateError(f"{call}() with no episode in progress. Next: call begin_episode() first")
        return self._episode

    def _video_frame_counts(self, committing: JournalEntry) -> dict[str, int]:
        """Frames in each camera's new video file (each episode has its own file per camera)."""
        new = [relative for relative in episode_files(self.spec.root) if relative not in committing.files]
        counts = {}
        for name in self.spec.camera_names:
            prefix = f"videos/{camera_key(name)}/"
            paths = [relative for relative in new if relative.startswith(prefix)]
            counts[name] = sum(adapter.video_frame_count(self.spec.root / relative) for relative in paths)
        return counts

    def _roll_back(self) -> None:
        """Undo a failed save so the dataset equals its last committed state."""
        if self._lerobot is not None:
            adapter.abandon(self._lerobot)
            self._lerobot = None
        journal = read_journal(self.spec.root) or self._journal
        self._journal, report = repair(self.spec.root, journal)
        logger.warning("%s: rolled back a failed save: %s", self.spec.root, report)


def _check_videos(root: Path, index: int, frames: int, counts: Mapping[str, int]) -> None:
    """Refuse an episode whose videos are short: LeRobot would pair its later frames with wrong images.

    Raises:
        ShortVideoError: one or more cameras' videos have fewer than `frames` frames.
    """
    short = {name: count for name, count in counts.items() if count < frames}
    if short:
        listed = ", ".join(f"{name} {count} of {frames}" for name, count in short.items())
        raise ShortVideoError(
            f"{root}: episode {index}'s videos came out short ({listed} frames); its save was rolled back and "
            f"the {index} saved episode(s) are intact. Next: record it again."
        )
