"""May this run append to an existing dataset? Every check reads only, so a refusal changes nothing.

    journal     meta/so101/journal.json, if there is one, is a well-formed record of ours
    info.json   the committed one (its backup while a save was interrupted) is readable
    version     its codebase_version is the one this LeRobot writes ("v3.0" for LeRobot 0.6.1)
    settings    fps, robot type, features and codec match the run (compatibility.py)
    ours        it has our journal: one another tool wrote is adopted only on request (adopt.py)
    repairable  the files of saved episodes are as saved, and an interrupted save can be undone

Only once `accept` returns may the opener repair (delete, restore, rewrite) anything.
"""

from pathlib import Path

from teleop.dataset.compatibility import check_compatible, load_info
from teleop.dataset.errors import DatasetVersionError, ForeignDatasetError, NotADatasetError
from teleop.dataset.journal import JOURNAL_PATH, JournalEntry, read_journal
from teleop.dataset.lerobot_format import FORMAT_VERSION
from teleop.dataset.next_steps import CONVERTIBLE_VERSION, NEW_FOLDER, adopt_command, convert_command
from teleop.dataset.repair import check_repairable, committed_info_path
from teleop.dataset.spec import WriterSpec


def accept(spec: WriterSpec) -> tuple[JournalEntry, dict]:
    """The journal and committed info.json of the dataset at `spec.root`, if this run may append to it.

    Raises:
        JournalCorruptError: the journal is unreadable or malformed.
        NotADatasetError: info.json is missing or unreadable.
        DatasetVersionError: the dataset is in another LeRobot format version.
        IncompatibleDatasetError: it was recorded with other settings.
        ForeignDatasetError: it has no journal of ours.
        DatasetCorruptError: files of saved episodes changed, or an undo's backups are gone.
    """
    root = spec.root
    journal = read_journal(root)
    info = read_info(committed_info_path(root, journal), root)
    check_version(info, root, spec.repo_id)
    check_compatible(spec, info)
    if journal is None:
        raise ForeignDatasetError(
            f"Cannot resume {root}: it has no {JOURNAL_PATH}, so it was not recorded by this program (LeRobot's "
            f"lerobot-record or another tool wrote it), and nothing was changed. Next: {NEW_FOLDER}, or adopt "
            f"it as it is now: {adopt_command(root)}"
        )
    check_repairable(root, journal)
    return journal, info


def read_info(info_path: Path, root: Path) -> dict:
    """A dataset's info.json, refused unless it is an object with features (the checks read both).

    Raises:
        NotADatasetError: missing, unreadable, or not LeRobot's info.json.
    """
    info = load_info(info_path, root)
    if not isinstance(info, dict) or not isinstance(info.get("features"), dict):
        raise NotADatasetError(
            f"{root} is not a LeRobot dataset ({info_path.name} holds no features object). "
            f"Next: {NEW_FOLDER}, or restore {info_path} from a copy."
        )
    return info


def check_version(info: dict, root: Path, repo_id: str | None) -> None:
    """Refuse a dataset whose format version is not the one this LeRobot writes.

    LeRobot itself only warns on an older minor version, but appending would mix two formats in
    one dataset; so any difference is refused.

    Raises:
        DatasetVersionError: the version found, the one expected, and how to go on.
    """
    found = info.get("codebase_version")
    if found == FORMAT_VERSION:
        return
    step = NEW_FOLDER
    if found == CONVERTIBLE_VERSION:
        # The converter rewrites the dataset beside it and keeps the original as <root>_old.
        step += f", or convert it with LeRobot's converter first: {convert_command(repo_id, root)}"
    raise DatasetVersionError(
        f"Cannot resume {root}: its meta/info.json has codebase_version {found!r}, this LeRobot writes "
        f"{FORMAT_VERSION!r}, and nothing was changed. Next: {step}"
    )
