"""Opening a dataset root: create a new dataset atomically, or check and repair an existing one.

new root        LeRobot creates an empty dataset in a staging dir beside it, the journal is
                written, everything is fsynced, then one rename puts it in place: a crash
                during creation leaves no half dataset at the root (the next create clears
                the staging dir)
existing root   every check runs first and reads only (acceptance.py: journal, info.json,
                codebase_version, settings, our journal present, repairable), so a refusal
                changes nothing; then an interrupted save is rolled back and temp files are
                cleared. A dataset without our journal (LeRobot's own lerobot-record wrote it)
                is refused until it is adopted on request (adopt.py)
"""

import os
import shutil

from teleop.dataset import lerobot_adapter as adapter
from teleop.dataset.acceptance import accept
from teleop.dataset.compatibility import load_info
from teleop.dataset.errors import NotADatasetError
from teleop.dataset.journal import JournalEntry, fsync_path, write_journal
from teleop.dataset.repair import repair
from teleop.dataset.results import RepairReport
from teleop.dataset.spec import WriterSpec


def recover(spec: WriterSpec) -> tuple[JournalEntry, dict, RepairReport]:
    """Check an existing dataset against the spec (changing nothing), then repair it.

    Raises:
        DatasetError: a refusal of `acceptance.accept`; the dataset is byte-identical.
    """
    journal, _ = accept(spec)
    journal, report = repair(spec.root, journal)
    return journal, load_info(spec.root / "meta/info.json", spec.root), report


def create(spec: WriterSpec) -> None:
    """Write an empty dataset in a staging dir, then rename it into place (so a crash leaves none)."""
    root = spec.root
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise NotADatasetError(
            f"{root} exists and is not a LeRobot dataset. Next: choose another dataset root, or empty that one."
        )
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = root.parent / f".{root.name}.so101-creating"
    shutil.rmtree(staging, ignore_errors=True)  # left by a crash during an earlier create
    adapter.create_empty(staging, spec)
    write_journal(staging, JournalEntry("committed", 0))
    for path in (staging / "meta/info.json", staging / "meta", staging):
        fsync_path(path)
    if root.exists():
        root.rmdir()
    os.rename(staging, root)
    fsync_path(root.parent)
