"""Errors of the dataset package (writer and reader). Each says what happened to which dataset and what to do next.

CommandError (robot/shell/errors.py: printed by every command as its one error line)
└── DatasetError                    anything about writing or reading a dataset
    ├── UnreadableDatasetError      reading: not a v3.0 dataset, broken metadata, data that disagrees with it
    ├── DatasetExistsError          resume is off but the root already holds a dataset
    ├── NotADatasetError            the root exists but is not a LeRobot dataset
    ├── IncompatibleDatasetError    resuming with other fps / features / cameras / robot / codec
    ├── DatasetVersionError         resuming a dataset of another LeRobot format (codebase_version)
    ├── ForeignDatasetError         resuming a dataset without our journal (another tool wrote it)
    ├── DatasetLockedError          another writer holds the dataset
    ├── DatasetCorruptError         committed files are missing or unreadable
    │   └── JournalCorruptError     meta/so101/journal.json is unreadable or malformed
    ├── DiskFullError               no space left while saving (the partial episode was rolled back)
    ├── EncoderError                the video encoder failed (the episode in progress is lost)
    │   └── ShortVideoError         a saved episode's videos had fewer frames than it (the save was rolled back)
    ├── WriterStateError            a call out of order (add_frame with no episode, ...)
    ├── FrameError                  a frame that does not fit the dataset (shape, dtype, cameras)
    ├── SharedMemoryError           /dev/shm has no room for the frame ring
    └── WriterProcessError          the writer process died, hung or failed unexpectedly

Every error is a plain message (plus, for IncompatibleDatasetError, the list of differences) so it
pickles across the writer-process boundary unchanged.

Standard library and robot/shell/ only: the reader (reader.py) raises these, and the evaluation
layer, which may import the dataset's leaves only (tests/support/layering.py), catches them.
"""

import errno
from pathlib import Path

from robot.shell.errors import CommandError


class DatasetError(CommandError):
    """Base of every error raised by `teleop.dataset`."""


class UnreadableDatasetError(DatasetError):
    """A dataset folder cannot be read (reader.py): the message names the file and the next step.

    The replay and the evaluation layer re-raise it as their own dataset error with the same message
    (policies.replay.errors.DatasetFormatError, evaluation.errors.DatasetReadError).
    """


class DatasetExistsError(DatasetError, FileExistsError):
    """A dataset is already at the root and resume was not asked for."""


class NoDatasetToResumeError(DatasetError):
    """Resume was asked for, and the root holds no dataset."""


class HubUploadError(DatasetError):
    """The dataset could not be uploaded to the Hugging Face Hub (it is saved, unchanged, on disk)."""


class NotADatasetError(DatasetError):
    """The root exists and is not empty, but holds no LeRobot dataset."""


class IncompatibleDatasetError(DatasetError):
    """The existing dataset was recorded with other settings; nothing was changed."""

    def __init__(self, root: str, differences: tuple[str, ...]) -> None:
        self.root = root
        self.differences = tuple(differences)
        listed = "\n".join(f"  - {difference}" for difference in self.differences)
        super().__init__(
            f"Cannot resume {root}: it was recorded with other settings (nothing was changed):\n{listed}\n"
            "Next: record into a new dataset root, or run with the dataset's settings."
        )

    def __reduce__(self) -> tuple:
        return (type(self), (self.root, self.differences))


class DatasetVersionError(DatasetError):
    """The existing dataset is in another LeRobot format version than this LeRobot writes; nothing was changed."""


class ForeignDatasetError(DatasetError):
    """The existing dataset has no journal of ours (another tool wrote it); nothing was changed."""


class DatasetLockedError(DatasetError):
    """Another process is writing to the dataset."""


class DatasetCorruptError(DatasetError):
    """Files of saved episodes are missing or unreadable; automatic repair cannot fix it."""


class JournalCorruptError(DatasetCorruptError):
    """The dataset's journal cannot be read or is not one this program writes; nothing was changed."""


class DiskFullError(DatasetError, OSError):
    """No space left on the dataset's disk; saved episodes are intact."""


class EncoderError(DatasetError):
    """The video encoder failed; the episode in progress is lost."""


class ShortVideoError(EncoderError):
    """An episode's videos came out with fewer frames than the episode; its save was rolled back."""


class WriterStateError(DatasetError):
    """A writer call made in the wrong state (programming error in the caller)."""


class WriterProcessError(DatasetError):
    """The writer process died, stopped answering, or failed unexpectedly."""


class SharedMemoryError(DatasetError, OSError):
    """The shared-memory filesystem is too small for the frame ring."""


class FrameError(DatasetError, ValueError):
    """A frame does not match the dataset (shape, dtype, cameras); the caller's bug."""


def classify(error: Exception, root: Path, doing: str, saved: int | None = None) -> DatasetError:
    """The typed error for a failure while recording or saving (`saved`: episodes kept, if rolled back).

    A full disk is recognised by errno or by the text LeRobot's encoder threads pass on (they
    report an exception as a string); LeRobot's encoder failures are RuntimeErrors naming the thread.
    """
    kept = f" The episode was rolled back; the {saved} saved episode(s) are intact." if saved is not None else ""
    text = str(error)
    if (isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT)) or "No space left" in text:
        return DiskFullError(f"{root}: the disk is full ({doing}).{kept} Next: free disk space, then resume recording.")
    if isinstance(error, DatasetError):
        return error
    if "encoder" in text.lower():
        return EncoderError(f"{root}: the video encoder failed ({doing}): {text}.{kept} Next: record it again.")
    return DatasetError(f"{root}: {doing} failed: {type(error).__name__}: {text}.{kept} Next: resume recording.")
