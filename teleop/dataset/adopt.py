"""python -m teleop.dataset.adopt --root=<folder>: let so101-record resume a dataset another tool wrote.

A dataset recorded by LeRobot's own lerobot-record (or converted, or edited by another tool) has no
journal of ours, and resuming it is refused: the journal is what tells every later repair which
files are saved episodes, so writing one is a change its owner asks for, never a side effect of
opening it. Adopting checks, reading only, that LeRobot could continue the dataset (info.json, its
codebase_version, every parquet file finalized, no save of ours left half done), then journals its
files as they are now. The rig's settings are checked when so101-record resumes it.

An edit by another tool (LeRobot's lerobot-edit-dataset) renumbers episodes; LeRobot does not carry
meta/so101/ along, but a person who copies it back (or edits the files by hand) leaves sidecars that
describe other episodes: each one that no longer describes the episode at its index is moved to
meta/so101/set_aside/ (never deleted) and named, so no episode inherits another's facts.

    python -m teleop.dataset.adopt --root=$HF_LEROBOT_HOME/me/fold_cloth

Exit status: 0 adopted, 1 refused (the line says why and what next; nothing was changed), 2 usage.
"""

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from robot.cli import UsageError, run_command
from robot.config_checks import reject_non_finite
from robot.errors import ConfigError
from robot.shell.parse import parse_options
from teleop.dataset.acceptance import check_version, read_info
from teleop.dataset.errors import DatasetCorruptError, DatasetError, NotADatasetError
from teleop.dataset.journal import BACKUP_DIR, JOURNAL_PATH, JournalEntry, episode_files, write_journal
from teleop.dataset.lock import DatasetLock
from teleop.dataset.next_steps import NEW_FOLDER
from teleop.dataset.repair import check_finalized
from teleop.dataset.sidecar import SIDECAR_DIR, SO101_DIR, check_all, episode_dir, sidecar_indices

SET_ASIDE_DIR = f"{SO101_DIR}/set_aside"  # sidecars an adoption found describing other episodes


@dataclass(frozen=True)
class Adopted:
    """What an adoption journaled and set aside."""

    journal: JournalEntry  # the new journal
    set_aside: tuple[str, ...]  # "episode N: why", one per sidecar moved to SET_ASIDE_DIR


@dataclass(frozen=True)
class AdoptConfig:
    """Options of `python -m teleop.dataset.adopt`."""

    root: Path | None = None  # the dataset folder to adopt (the one holding meta/info.json); required
    # How long to wait for a recording that is writing the dataset to let go of it, s
    lock_timeout_s: float = 1.0

    def __post_init__(self) -> None:
        reject_non_finite(self, "")
        if self.lock_timeout_s < 0:
            raise ConfigError(f"lock_timeout_s={self.lock_timeout_s} is negative. Next: --lock_timeout_s=1")


def adopt(root: Path, lock_timeout_s: float = 1.0) -> Adopted:
    """Journal a dataset another tool wrote, as it is now, so that it can be resumed.

    Sidecars of ours that describe other episodes than those at their indices now are set aside first.

    Raises:
        NotADatasetError: `root` holds no readable LeRobot dataset.
        DatasetVersionError: it is in another LeRobot format version.
        DatasetCorruptError: a parquet file was never finalized, or a save of ours lost its journal.
        DatasetLockedError: a recording is writing it.
        DatasetError: it has our journal already.
        Nothing was changed in each case.
    """
    root = Path(root)
    if not root.is_dir():
        raise NotADatasetError(f"{root} is not a folder. Next: give the dataset's folder, the one holding meta/")
    lock = DatasetLock(root, lock_timeout_s)
    try:
        if (root / JOURNAL_PATH).exists():
            raise DatasetError(
                f"{root} already has our journal ({JOURNAL_PATH}); nothing was changed. Next: resume it "
                "(--dataset.resume=true)"
            )
        if (root / BACKUP_DIR).exists():
            raise DatasetCorruptError(
                f"{root}: a save by this program was interrupted and its journal is gone, so it cannot be undone "
                f"({BACKUP_DIR} is left); nothing was changed. Next: restore the dataset from a copy, or {NEW_FOLDER}"
            )
        info = read_info(root / "meta/info.json", root)
        check_version(info, root, None)
        episodes = info.get("total_episodes", 0)
        if not isinstance(episodes, int) or isinstance(episodes, bool) or episodes < 0:
            raise NotADatasetError(
                f"{root}: meta/info.json has total_episodes {episodes!r}, not a count; nothing was changed. "
                f"Next: restore it from a copy, or {NEW_FOLDER}"
            )
        check_finalized(root)
        set_aside = _set_aside_stale_sidecars(root)
        entry = JournalEntry("committed", episodes, episode_files(root))
        write_journal(root, entry)
        return Adopted(entry, set_aside)
    finally:
        lock.release()


def _set_aside_stale_sidecars(root: Path) -> tuple[str, ...]:
    """Move every sidecar that no longer belongs to its episode under SET_ASIDE_DIR; name each."""
    if not sidecar_indices(root):  # a dataset another tool recorded: nothing of ours to check
        return ()
    moved = []
    for check in check_all(root):
        if check.status != "stale":
            continue
        source = episode_dir(root, check.index)
        target = root / SET_ASIDE_DIR / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():  # set aside by an earlier adoption: keep both
            target = target.with_name(f"{source.name}.{len(list(target.parent.glob(source.name + '*')))}")
        source.rename(target)
        moved.append(f"episode {check.index}: {check.reason}")
    return tuple(moved)


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m teleop.dataset.adopt`."""

    def body() -> int:
        args = sys.argv[1:] if argv is None else argv
        config = parse_options(AdoptConfig, args, doc=__doc__, example="python -m teleop.dataset.adopt --root=<folder>")
        if config.root is None:
            raise UsageError("--root is required: the dataset folder to adopt, e.g. --root=data/fold_cloth")
        adopted = adopt(config.root, config.lock_timeout_s)
        entry = adopted.journal
        if adopted.set_aside:
            print(
                f"{len(adopted.set_aside)} sidecar(s) in {config.root / SIDECAR_DIR} describe other episodes than "
                f"the dataset holds now (edited by another tool), moved to {config.root / SET_ASIDE_DIR}: "
                + "; ".join(adopted.set_aside)
            )
        print(
            f"adopted {config.root}: {entry.episodes} episode(s), {len(entry.files)} file(s) journaled. "
            f"Next: so101-record --dataset.root={shlex.quote(str(config.root))} --dataset.resume=true ..."
        )
        return 0

    return run_command(body)


if __name__ == "__main__":
    sys.exit(main())
