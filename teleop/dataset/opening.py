"""Opening a dataset root: create a new dataset atomically, or check and repair an existing one.

new root        LeRobot creates an empty dataset in a staging dir beside it, the journal is
                written, everything is fsynced, then one rename puts it in place: a crash
                during creation leaves no half dataset at the root (the next create clears
                the staging dir)
existing root   its committed info.json is checked against the spec first (a refusal changes
                nothing), then an interrupted save is rolled back and temp files are cleared;
                a dataset without our journal (written by LeRobot itself) is adopted if every
                parquet file has its footer
"""

import os
import shutil

from teleop.dataset import lerobot_adapter as adapter
from teleop.dataset.compatibility import check_compatible, load_info
from teleop.dataset.errors import NotADatasetError
from teleop.dataset.journal import JournalEntry, episode_files, fsync_path, read_journal, write_journal
from teleop.dataset.repair import check_finalized, committed_info_path, remove_strays, repair
from teleop.dataset.results import RepairReport
from teleop.dataset.spec import WriterSpec


def recover(spec: WriterSpec) -> tuple[JournalEntry, dict, RepairReport]:
    """Check an existing dataset against the spec (changing nothing), then repair it."""
    root = spec.root
    journal = read_journal(root)
    info = load_info(committed_info_path(root, journal), root)
    check_compatible(spec, info)
    if journal is None:
        # Written by another tool (or by LeRobot itself): adopt it as it is, if it was finalized.
        check_finalized(root)
        removed = remove_strays(root)
        journal = JournalEntry("committed", int(info.get("total_episodes", 0)), episode_files(root))
        write_journal(root, journal)
        return journal, info, RepairReport(removed=tuple(removed))
    journal, report = repair(root, journal)
    return journal, load_info(root / "meta/info.json", root), report


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
