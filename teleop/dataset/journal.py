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
journal is always either the old or the new record. `read_journal` refuses a record that is not
exactly what `write_journal` writes (truncated, edited, foreign types): a repair deletes and
restores files by what it says.
"""

import json
import logging
import os
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from teleop.dataset.errors import JournalCorruptError
from teleop.dataset.next_steps import NEW_FOLDER, adopt_command
from teleop.dataset.sidecar import SIDECAR_DIR, SO101_DIR

logger = logging.getLogger(__name__)

JOURNAL_PATH = f"{SO101_DIR}/journal.json"
BACKUP_DIR = f"{SO101_DIR}/backup"
TEMP_SUFFIX = ".so101-tmp"
# Files LeRobot rewrites in place on every save: backed up before, restored on rollback.
RESTORABLE = ("meta/info.json", "meta/stats.json", "meta/tasks.parquet")
# Directories where each save only adds new files (one data, metadata and video file per camera per
# episode, because the dataset is reopened after every save), plus our per-episode sidecars.
EPISODE_DIRS = ("data", "videos", "meta/episodes", SIDECAR_DIR)
_FORMAT = 1
_STATES = ("committed", "committing")


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


def holds_dataset(root: Path) -> bool:
    """Whether `root` holds a dataset to resume (LeRobot's info.json, or our journal of one)."""
    return (root / "meta/info.json").exists() or (root / JOURNAL_PATH).exists()


def read_journal(root: Path) -> JournalEntry | None:
    """The journal of a dataset, or None if it has none (new, or written by another tool). Reads only.

    Raises:
        JournalCorruptError: it cannot be read, is not JSON, or is not a record `write_journal` writes.
    """
    path = root / JOURNAL_PATH
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise _corrupt(root, f"it cannot be read ({error.strerror})") from error
    if not data.strip():
        raise _corrupt(root, "it is empty")
    try:
        raw = json.loads(data)
    except ValueError as error:  # JSONDecodeError and UnicodeDecodeError both are
        raise _corrupt(root, f"it is not valid JSON ({error})") from error
    problem = _problem(raw)
    if problem is not None:
        raise _corrupt(root, problem)
    return JournalEntry(raw["state"], raw["episodes"], dict(raw["files"]), tuple(raw["backups"]))


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


def _problem(raw: object) -> str | None:
    """What makes `raw` not a journal record (None if it is one): a repair acts on every field."""
    if not isinstance(raw, dict):
        return f"it holds a JSON {type(raw).__name__}, not an object"
    missing = [key for key in ("format", "state", "episodes", "files", "backups") if key not in raw]
    if missing:
        return f"{', '.join(missing)} missing"
    if raw["format"] != _FORMAT:
        return f"format is {raw['format']!r}, this program reads format {_FORMAT}"
    if raw["state"] not in _STATES:
        return f"state is {raw['state']!r}, expected one of {', '.join(_STATES)}"
    if not _is_count(raw["episodes"]):
        return f"episodes is {raw['episodes']!r}, expected a whole number >= 0"
    files = raw["files"]
    if not isinstance(files, dict):
        return f"files is a {type(files).__name__}, expected an object of path -> bytes"
    for relative, size in files.items():
        if not _is_episode_path(relative):
            return f"files lists {relative!r}, which is not a path under {', '.join(EPISODE_DIRS)}"
        if not _is_count(size):
            return f"files gives {relative} a size of {size!r}, expected a whole number of bytes"
    backups = raw["backups"]
    if not isinstance(backups, list) or any(backup not in RESTORABLE for backup in backups):
        return f"backups is {backups!r}, expected a list of some of {', '.join(RESTORABLE)}"
    return None


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_episode_path(relative: object) -> bool:
    # A repair deletes and stats files by these paths: nothing outside the episode directories.
    if not isinstance(relative, str) or "\\" in relative:
        return False
    path = PurePosixPath(relative)
    return (
        not path.is_absolute()
        and ".." not in path.parts
        and any(relative.startswith(f"{top}/") for top in EPISODE_DIRS)
    )


def _corrupt(root: Path, problem: str) -> JournalCorruptError:
    journal = root / JOURNAL_PATH
    return JournalCorruptError(
        f"Cannot open {root}: its journal {JOURNAL_PATH} is not valid: {problem} (nothing was changed). Next: restore "
        f"the dataset from a copy, or {NEW_FOLDER}; or keep its files as they are now: "
        f"rm {shlex.quote(str(journal))} && {adopt_command(root)}"
    )


def fsync_path(path: Path) -> None:
    """Flush a file or a directory to disk (so a rename or a new entry in it survives power loss)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
