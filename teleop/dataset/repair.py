"""Bring a dataset back to its last committed state after a crash, kill -9, power loss or full disk.

    first                   ->  check_repairable, reading only: a refusal leaves the dataset as it was
    journal "committing N"  ->  delete the files episode N's save created (not in the journal's list),
                                restore info.json / stats.json / tasks.parquet from the backups,
                                journal "committed N" again
    always                  ->  delete LeRobot's streaming-encoder temp dirs (root/tmpXXXXXXXX), its
                                PNG staging dir (images/), our temp files and stale backups

Every step checks the disk before acting, so repairing twice, or a crash in the middle of a repair
followed by another repair, ends in the same state; a second repair reports no change.
"""

import logging
import os
import re
import shlex
import shutil
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq

from teleop.dataset.errors import DatasetCorruptError
from teleop.dataset.faults import fault_point
from teleop.dataset.journal import (
    BACKUP_DIR,
    EPISODE_DIRS,
    JOURNAL_PATH,
    RESTORABLE,
    TEMP_SUFFIX,
    JournalEntry,
    episode_files,
    fsync_path,
    remove_backups,
    write_journal,
)
from teleop.dataset.next_steps import adopt_command
from teleop.dataset.results import RepairReport

logger = logging.getLogger(__name__)

# tempfile.mkdtemp names: "tmp" + 8 characters; LeRobot's streaming encoder makes them in the root.
_LEROBOT_TEMP_DIR = re.compile(r"^tmp[a-z0-9_]{8}$")
_NEXT_STEP = "Next: restore the dataset from a copy, or record into a new dataset root."


def committed_info_path(root: Path, journal: JournalEntry | None) -> Path:
    """Where the committed info.json is: its backup while a save was interrupted, else in place."""
    if journal is not None and journal.committing and "meta/info.json" in journal.backups:
        return root / BACKUP_DIR / "info.json"
    return root / "meta/info.json"


def check_repairable(root: Path, journal: JournalEntry) -> None:
    """Refuse, changing nothing, a dataset `repair` could not bring back to its journal's committed state.

    The files of saved episodes must be as they were saved, and while a save was interrupted the
    backups its undo restores must exist (they are written before the journal names them, and
    removed only after the journal says committed again, so a crash mid-repair keeps them).

    Raises:
        DatasetCorruptError: what is missing or changed, and what to do.
    """
    _check_committed(root, journal)
    if journal.committing:
        for relative in journal.backups:
            if not (root / BACKUP_DIR / Path(relative).name).is_file():
                raise DatasetCorruptError(
                    f"{root}: the backup of {relative} is missing, cannot undo the last save. {_NEXT_STEP}"
                )


def repair(root: Path, journal: JournalEntry) -> tuple[JournalEntry, RepairReport]:
    """Roll back an interrupted save and clear temp files; returns the committed journal entry.

    Raises:
        DatasetCorruptError: `check_repairable` refused (before anything was changed).
    """
    check_repairable(root, journal)
    removed: list[str] = []
    restored: list[str] = []
    rolled_back = None
    if journal.committing:
        rolled_back = journal.episodes
        removed += _delete_uncommitted(root, journal)
        for relative in RESTORABLE:
            if relative in journal.backups:
                if _restore(root, relative):
                    restored.append(relative)
            elif (root / relative).exists():
                (root / relative).unlink()
                removed.append(relative)
        fsync_path(root / "meta")
        fault_point("repair:restored")
        journal = replace(journal, state="committed", backups=())
        write_journal(root, journal)
    remove_backups(root)
    removed += remove_strays(root)
    if rolled_back is not None:
        logger.warning("%s: rolled back the interrupted save of episode %d", root, rolled_back)
    if removed:
        logger.info("%s: removed %d leftover path(s): %s", root, len(removed), ", ".join(removed[:5]))
    return journal, RepairReport(rolled_back, tuple(removed), tuple(restored))


def remove_strays(root: Path) -> list[str]:
    """Delete temp files and dirs a crash can leave (never anything a committed episode uses)."""
    removed = []
    for path in sorted(root.iterdir()):
        if path.is_dir() and (_LEROBOT_TEMP_DIR.match(path.name) or path.name == "images"):
            shutil.rmtree(path)
            removed.append(path.name)
    meta = root / "meta"
    if meta.is_dir():
        for path in sorted(meta.rglob(f"*{TEMP_SUFFIX}")):
            path.unlink()
            removed.append(path.relative_to(root).as_posix())
    _remove_empty_dirs(root)
    return removed


def check_finalized(root: Path) -> None:
    """Refuse a dataset without our journal whose parquet files lack a footer (never finalized).

    LeRobot writes parquet footers only in `finalize()`, so a LeRobot recording killed mid-session
    leaves files no reader can open; only LeRobot-side tools can salvage those.
    """
    broken = []
    for top in ("data", "meta/episodes"):
        for path in sorted((root / top).rglob("*.parquet")) if (root / top).is_dir() else []:
            try:
                pq.read_metadata(path)
            except Exception:  # pyarrow raises several types for a missing footer
                broken.append(path.relative_to(root).as_posix())
    if broken:
        raise DatasetCorruptError(
            f"{root}: {len(broken)} parquet file(s) were never finalized (no footer), e.g. {broken[0]}; "
            f"the recording that wrote them was killed before LeRobot's finalize(). {_NEXT_STEP}"
        )


def _delete_uncommitted(root: Path, journal: JournalEntry) -> list[str]:
    removed = []
    for relative in episode_files(root):
        if relative not in journal.files:
            (root / relative).unlink()
            removed.append(relative)
    for directory in {(root / relative).parent for relative in removed if (root / relative).parent.exists()}:
        fsync_path(directory)
    return removed


def _restore(root: Path, relative: str) -> bool:
    """Put a backed-up file back in place (a hard link and a rename: no new disk space needed)."""
    backup = root / BACKUP_DIR / Path(relative).name
    target = root / relative
    if not backup.exists():
        raise DatasetCorruptError(
            f"{root}: the backup of {relative} is missing, cannot undo the last save. {_NEXT_STEP}"
        )
    if target.exists() and target.read_bytes() == backup.read_bytes():
        return False
    temp = target.with_name(target.name + TEMP_SUFFIX)
    temp.unlink(missing_ok=True)
    os.link(backup, temp)
    os.replace(temp, target)
    return True


def _check_committed(root: Path, journal: JournalEntry) -> None:
    bad = []
    for relative, size in journal.files.items():
        path = root / relative
        if not path.is_file():
            bad.append(f"{relative} is missing")
        elif path.stat().st_size != size:
            bad.append(f"{relative} has {path.stat().st_size} bytes, {size} were saved")
    if bad:
        raise DatasetCorruptError(
            f"{root}: files of saved episodes changed outside this program: {'; '.join(bad[:5])}"
            f"{' ...' if len(bad) > 5 else ''}. {_NEXT_STEP} If you edited the dataset with another tool on "
            f"purpose, adopt it as it is now: rm {shlex.quote(str(root / JOURNAL_PATH))} && {adopt_command(root)}"
        )


def _remove_empty_dirs(root: Path) -> None:
    for top in EPISODE_DIRS:
        base = root / top
        if not base.is_dir():
            continue
        for directory in sorted((p for p in base.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
            if not any(directory.iterdir()):
                directory.rmdir()
