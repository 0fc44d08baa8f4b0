"""The commit journal: which episodes of a dataset are durable, and how to undo a save in progress.

    meta/so101/journal.json      {"state": "committed"|"committing", "episodes": N, "files": {path: bytes}, ...}
    meta/so101/backup/           copies of info.json, stats.json, tasks.parquet while a save runs

A save is bracketed by two journal writes:

    begin_commit   back up the files LeRobot rewrites in place, then journal "committing episode N"
    ... LeRobot writes episode N's new data/video/metadata files and rewrites info/stats/tasks ...
    finish_commit  fsync every new file, then journal "committed N+1" with the new file list

`files` lists every committed file under the directories a save adds to (EPISODE_DIRS) with its
size, so a rollback deletes exactly what the interrupted save created. Every journal write is
atomic (write a temp file, fsync, rename, fsync the directory), so after a crash or power loss the
journal is always either the old or the new record.
"""

import json
import logging
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

logger = logging.getLogger(__name__)

SO101_DIR = "meta/so101"
JOURNAL_PATH = f"{SO101_DIR}/journal.json"
BACKUP_DIR = f"{SO101_DIR}/backup"
TEMP_SUFFIX = ".so101-tmp"
# Files LeRobot rewrites in place on every save: backed up before, restored on rollback.
RESTORABLE = ("meta/info.json", "meta/stats.json", "meta/tasks.parquet")
# Directories where each save only adds new files (one data, metadata and video file per camera per
# episode, because the dataset is reopened after every save), plus our per-episode sidecars.
EPISODE_DIRS = ("data", "videos", "meta/episodes", f"{SO101_DIR}/episodes")
_FORMAT = 1


@dataclass(frozen=True)
class JournalEntry:
    """One journal record."""

    state: str  # "committed": the files below are the dataset; "committing": a save of episode `episodes` runs
    episodes: int  # episodes committed (the index of the one being saved while committing)
    files: dict[str, int] = field(default_factory=dict)  # committed files under EPISODE_DIRS -> size, bytes
    backups: tuple[str, ...] = ()  # RESTORABLE files that existed (and were backed up) when the save began

    @property
    def committing(self) -> bool:
        """Whether a save was in progress when this record was written."""
        return self.state == "committing"


def read_journal(root: Path) -> JournalEntry | None:
    """The journal of a dataset, or None if it has none (new, or written by another tool)."""
    path = root / JOURNAL_PATH
    if not path.exists():
        return None
    raw = json.loads(path.read_text())
    return JournalEntry(raw["state"], int(raw["episodes"]), dict(raw["files"]), tuple(raw["backups"]))


def write_journal(root: Path, entry: JournalEntry) -> None:
    """Replace the journal atomically and durably."""
    record = {"format": _FORMAT, "state": entry.state, "episodes": entry.episodes, "backups": list(entry.backups)}
    record["files"] = dict(sorted(entry.files.items()))
    atomic_write(root / JOURNAL_PATH, json.dumps(record, indent=1).encode())


def episode_files(root: Path) -> dict[str, int]:
    """Every file under EPISODE_DIRS (relative path -> size), temp files excluded."""
    files = {}
    for top in EPISODE_DIRS:
        base = root / top
        if not base.is_dir():
            continue
        for path in base.rglob("*"):
            relative = path.relative_to(root).as_posix()
            if path.is_file() and not relative.endswith(TEMP_SUFFIX):
                files[relative] = path.stat().st_size
    return files


def begin_commit(root: Path, committed: JournalEntry) -> JournalEntry:
    """Back up the files LeRobot rewrites, then journal that episode `committed.episodes` is being saved."""
    backups = []
    for relative in RESTORABLE:
        source = root / relative
        if source.exists():
            atomic_write(root / BACKUP_DIR / Path(relative).name, source.read_bytes())
            backups.append(relative)
    entry = replace(committed, state="committing", backups=tuple(backups))
    write_journal(root, entry)
    return entry


def finish_commit(root: Path, committing: JournalEntry) -> JournalEntry:
    """Make the new episode durable: fsync its files and the rewritten metadata, then journal it."""
    files = episode_files(root)
    new = [relative for relative in files if relative not in committing.files]
    for relative in [*new, *(r for r in RESTORABLE if (root / r).exists())]:
        fsync_path(root / relative)
    # Every directory on the way: a new chunk or sidecar directory is itself a new entry in its parent.
    directories = {root / "meta", root}
    for relative in new:
        directories.update(parent for parent in (root / relative).parents if parent.is_relative_to(root))
    for directory in sorted(directories, key=lambda path: len(path.parts), reverse=True):
        fsync_path(directory)
    entry = JournalEntry("committed", committing.episodes + 1, files, ())
    write_journal(root, entry)
    remove_backups(root)
    return entry


def remove_backups(root: Path) -> None:
    """Delete the backup copies (only valid while the journal says committing)."""
    backup_dir = root / BACKUP_DIR
    if backup_dir.is_dir():
        for path in backup_dir.iterdir():
            path.unlink()
        backup_dir.rmdir()


def atomic_write(path: Path, data: bytes) -> None:
    """Write a file so that a crash leaves either the old or the new content, never a mix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(path.name + TEMP_SUFFIX)
    with open(temp, "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temp, path)
    fsync_path(path.parent)


def fsync_path(path: Path) -> None:
    """Flush a file or a directory to disk (so a rename or a new entry in it survives power loss)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
