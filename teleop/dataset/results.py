"""What the dataset writer reports back: plain frozen records, cheap to import and to pickle."""

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class RepairReport:
    """What opening a dataset had to undo."""

    rolled_back_episode: int | None = None  # index of the episode whose interrupted save was undone
    removed: tuple[str, ...] = ()  # paths deleted, relative to the root (partial episode, temp files)
    restored: tuple[str, ...] = ()  # metadata files put back from the journal's backups

    @property
    def changed(self) -> bool:
        """Whether anything on disk was changed."""
        return bool(self.rolled_back_episode is not None or self.removed or self.restored)


@dataclass(frozen=True)
class OpenReport:
    """What opening a dataset found and did."""

    root: Path  # the dataset directory
    episodes: int  # saved episodes: also the index the next episode gets
    frames: int  # saved frames
    created: bool  # True if a new, empty dataset was written
    repair: RepairReport = field(default_factory=RepairReport)  # what had to be undone (empty if nothing)


@dataclass(frozen=True)
class SavedEpisode:
    """An episode that is now durable."""

    index: int  # its episode_index in the dataset
    frames: int  # frames saved
    dropped_frames: int  # frames the control side could not hand over (writer ring full); 0 in-process
    encoder_dropped_frames: int  # frames missing from its videos: always 0 (a short save is rolled back)
    encoder_waits: int  # times a frame waited for an encoder (backpressure: delay, never loss)
    save_s: float  # how long the save blocked its caller, seconds
