"""Resuming refuses what it cannot safely continue, in one line with the next step, and changes nothing.

Each refusal is checked against the whole tree: every path (directories too) and every file's bytes.
The datasets are real: ours from DurableDataset, theirs from LeRobotDataset itself.
"""

import json
import shlex
import subprocess
import sys

import pytest
from lerobot.datasets.dataset_metadata import CODEBASE_VERSION

from teleop.dataset.adopt import adopt, main
from teleop.dataset.durable import DurableDataset
from teleop.dataset.errors import (
    DatasetCorruptError,
    DatasetError,
    DatasetVersionError,
    ForeignDatasetError,
    IncompatibleDatasetError,
    JournalCorruptError,
    NotADatasetError,
)
from teleop.dataset.journal import JOURNAL_PATH, read_journal
from teleop.dataset.lerobot_format import FORMAT_VERSION
from teleop.dataset.next_steps import CONVERT_MODULE
from tests.teleop.dataset.helpers import check_loads, record, spec, tree


def add_leftovers(root):
    """What a crashed run leaves and a repair would delete: refusals must leave these too."""
    (root / "tmpabcd1234").mkdir()  # LeRobot's streaming-encoder temp dir
    (root / "tmpabcd1234/partial.mp4").write_bytes(b"half a video")
    (root / "images").mkdir(exist_ok=True)  # LeRobot's PNG staging dir (LeRobot itself leaves it)
    (root / "images/frame-000000.png").write_bytes(b"png")
    (root / "meta/info.json.so101-tmp").write_bytes(b"{")  # our temp file


def set_info(root, **fields):
    info_path = root / "meta/info.json"
    info = json.loads(info_path.read_text())
    for key, value in fields.items():
        if value is None:
            info.pop(key, None)
        else:
            info[key] = value
    info_path.write_text(json.dumps(info, indent=4))


def refused(root, error_type, **overrides):
    """Open with resume; returns the error's text after checking it is one line and the tree is unchanged."""
    before = tree(root)
    with pytest.raises(error_type) as caught:
        DurableDataset.open(spec(root, **overrides))
    assert tree(root) == before
    text = str(caught.value)
    assert "\n" not in text, text
    assert "Next:" in text, text
    return text


# --- codebase_version ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["v2.1", "v2.0", "v3.1", "v4.0", None])
def test_another_codebase_version_is_refused_and_changes_nothing(committed, version):
    root, _ = committed
    set_info(root, codebase_version=version)
    add_leftovers(root)
    text = refused(root, DatasetVersionError)
    assert f"codebase_version {version!r}" in text
    assert f"this LeRobot writes {CODEBASE_VERSION!r}" in text
    assert "--dataset.root=<new folder>" in text
    converter = f"python -m {CONVERT_MODULE} --repo-id=test/fold --root={shlex.quote(str(root))} --push-to-hub=false"
    assert (converter in text) == (version == "v2.1"), text  # it converts v2.1 only


def test_the_version_is_checked_before_the_settings(committed):
    root, _ = committed
    set_info(root, codebase_version="v2.1")
    refused(root, DatasetVersionError, fps=15)


def test_the_version_of_a_dataset_without_our_journal_is_checked_too(theirs):
    set_info(theirs, codebase_version="v2.1")
    refused(theirs, DatasetVersionError)


def test_this_lerobot_writes_the_version_resume_expects(tmp_path):
    with DurableDataset.open(spec(tmp_path / "ds")):
        pass
    written = json.loads((tmp_path / "ds/meta/info.json").read_text())["codebase_version"]
    # The adapter's pinned FORMAT_VERSION (what resume, replay and the judge expect) is LeRobot's own.
    assert written == CODEBASE_VERSION == FORMAT_VERSION == "v3.0"


@pytest.mark.slow
def test_the_converter_named_ships_with_this_lerobot():
    # The refusal's command must start: the module exists and takes the options it is given.
    shown = subprocess.run(
        [sys.executable, "-m", CONVERT_MODULE, "--help"], capture_output=True, text=True, timeout=300, check=False
    )
    assert shown.returncode == 0, shown.stderr[-2000:]
    for option in ("--repo-id", "--root", "--push-to-hub"):
        assert option in shown.stdout


# --- datasets without our journal -----------------------------------------------------------------


def test_a_dataset_lerobot_wrote_is_refused_and_changes_nothing(theirs):
    add_leftovers(theirs)
    text = refused(theirs, ForeignDatasetError)
    assert f"no {JOURNAL_PATH}" in text
    assert "--dataset.root=<new folder>" in text
    assert f"python -m teleop.dataset.adopt --root={theirs}" in text


def test_our_dataset_with_its_journal_deleted_is_refused_and_changes_nothing(committed):
    root, _ = committed
    (root / JOURNAL_PATH).unlink()
    refused(root, ForeignDatasetError)


def test_a_foreign_dataset_recorded_with_other_settings_names_the_differences_first(theirs):
    before = tree(theirs)
    with pytest.raises(IncompatibleDatasetError, match="fps: the dataset has 30, this run asks for 15"):
        DurableDataset.open(spec(theirs, fps=15))
    assert tree(theirs) == before


@pytest.mark.parametrize(
    ("info", "expected"),
    [(b"", "info.json"), (b'{"codebase_version": "v3.0"', "info.json"), (b"[1, 2]", "no features object")],
)
def test_a_folder_with_an_unreadable_info_json_is_refused_and_changes_nothing(tmp_path, info, expected):
    root = tmp_path / "ds"
    (root / "meta").mkdir(parents=True)
    (root / "meta/info.json").write_bytes(info)
    (root / "data").mkdir()
    before = tree(root)
    with pytest.raises(NotADatasetError, match=expected) as refusal:
        DurableDataset.open(spec(root))
    assert tree(root) == before
    assert "--dataset.root=<new folder>" in str(refusal.value)  # the way on never deletes the folder
    assert "remove" not in str(refusal.value)


# --- corrupt journals ---------------------------------------------------------------------------


def _truncated(text: str) -> bytes:
    return text.encode()[: len(text) // 2]


def _edited(**fields: object):
    def edit(text: str) -> bytes:
        return json.dumps(json.loads(text) | fields).encode()

    return edit


CORRUPTIONS = {
    "truncated": (_truncated, "not valid JSON"),
    "empty": (lambda text: b"", "it is empty"),
    "garbage": (lambda text: b"\x00\xff\xfe journal", "not valid JSON"),
    "not an object": (lambda text: b"[]", "JSON list, not an object"),
    "episodes a string": (_edited(episodes="2"), "episodes is '2'"),
    "episodes negative": (_edited(episodes=-1), "episodes is -1"),
    "episodes a bool": (_edited(episodes=True), "episodes is True"),
    "files a list": (_edited(files=["data/chunk-000/file-000.parquet"]), "files is a list"),
    "a size a string": (_edited(files={"data/chunk-000/file-000.parquet": "12"}), "a size of '12'"),
    "a path outside": (_edited(files={"data/../../etc/passwd": 1}), "not a path under"),
    "an absolute path": (_edited(files={"/data/x.parquet": 1}), "not a path under"),
    "unknown state": (_edited(state="saving"), "state is 'saving'"),
    "unknown format": (_edited(format=2), "format is 2"),
    "backups elsewhere": (_edited(state="committing", backups=["../../x"]), "backups is"),
    "backups a string": (_edited(backups="meta/info.json"), "backups is"),
}


@pytest.mark.parametrize("name", CORRUPTIONS)
def test_a_corrupt_journal_is_refused_in_one_line_and_changes_nothing(committed, name):
    root, _ = committed
    corrupt, expected = CORRUPTIONS[name]
    journal = root / JOURNAL_PATH
    journal.write_bytes(corrupt(journal.read_text()))
    add_leftovers(root)
    text = refused(root, JournalCorruptError)
    assert expected in text
    assert f"its journal {JOURNAL_PATH} is not valid" in text
    assert f"rm {journal} && python -m teleop.dataset.adopt --root={root}" in text
    assert "--dataset.root=<new folder>" in text


def test_a_journal_that_is_a_directory_is_refused(committed):
    root, _ = committed
    (root / JOURNAL_PATH).unlink()
    (root / JOURNAL_PATH).mkdir()
    assert "cannot be read" in refused(root, JournalCorruptError)


def test_the_next_step_of_a_corrupt_journal_works(committed):
    root, _ = committed
    journal = root / JOURNAL_PATH
    journal.write_bytes(_truncated(journal.read_text()))
    refused(root, JournalCorruptError)
    journal.unlink()  # the step the message gives: rm <journal> && adopt
    assert adopt(root).journal.episodes == 2
    with DurableDataset.open(spec(root)) as dataset:
        assert dataset.report.episodes == 2
        record(dataset, 2, 3)
    check_loads(root, [5, 7, 3])


# --- a save that cannot be undone is refused before the undo starts -------------------------------


def test_an_interrupted_save_whose_backup_is_gone_is_refused_before_anything_is_deleted(committed):
    root, _ = committed
    committed_journal = json.loads((root / JOURNAL_PATH).read_text())
    (root / JOURNAL_PATH).write_text(
        json.dumps(committed_journal | {"state": "committing", "backups": ["meta/stats.json"]})
    )
    (root / "data/chunk-000/file-099.parquet").write_bytes(b"the interrupted save's data")
    add_leftovers(root)
    text = refused(root, DatasetCorruptError)
    assert "backup of meta/stats.json is missing" in text


def test_an_interrupted_save_with_a_saved_file_gone_is_refused_before_anything_is_deleted(committed):
    root, _ = committed
    committed_journal = json.loads((root / JOURNAL_PATH).read_text())
    (root / JOURNAL_PATH).write_text(json.dumps(committed_journal | {"state": "committing", "backups": []}))
    (root / "data/chunk-000/file-099.parquet").write_bytes(b"the interrupted save's data")
    saved = next(path for path in committed_journal["files"] if path.startswith("videos/"))
    (root / saved).unlink()
    text = refused(root, DatasetCorruptError)
    assert f"{saved} is missing" in text
    assert f"rm {root / JOURNAL_PATH} && python -m teleop.dataset.adopt --root={root}" in text


# --- adopting, on request -------------------------------------------------------------------------


def test_adopting_journals_the_files_as_they_are(theirs):
    entry = adopt(theirs).journal
    assert read_journal(theirs) == entry
    assert entry.state == "committed"
    assert entry.episodes == 1
    assert sum(1 for path in entry.files if path.startswith("videos/")) == 3
    assert all((theirs / path).stat().st_size == size for path, size in entry.files.items())


def test_adopting_our_own_dataset_is_refused_and_changes_nothing(committed):
    root, _ = committed
    before = tree(root)
    with pytest.raises(DatasetError, match="already has our journal"):
        adopt(root)
    assert tree(root) == before


def test_adopting_a_dataset_whose_save_lost_its_journal_is_refused(committed):
    root, _ = committed
    (root / JOURNAL_PATH).unlink()
    (root / "meta/so101/backup").mkdir()
    (root / "meta/so101/backup/info.json").write_bytes((root / "meta/info.json").read_bytes())
    before = tree(root)
    with pytest.raises(DatasetCorruptError, match="interrupted and its journal is gone"):
        adopt(root)
    assert tree(root) == before


def test_adopting_another_version_is_refused_with_the_converter(theirs):
    set_info(theirs, codebase_version="v2.1")
    before = tree(theirs)
    with pytest.raises(DatasetVersionError, match=CONVERT_MODULE):
        adopt(theirs)
    assert tree(theirs) == before


def test_the_adopt_command(theirs, tmp_path, capsys):
    assert main([]) == 2
    assert "--root is required" in capsys.readouterr().err
    assert main([f"--root={tmp_path / 'nowhere'}"]) == 1
    assert "is not a folder" in capsys.readouterr().err
    assert main([f"--root={theirs}"]) == 0
    out = capsys.readouterr().out
    assert "1 episode(s)" in out
    assert f"so101-record --dataset.root={theirs} --dataset.resume=true" in out
    assert main([f"--root={theirs}"]) == 1  # once is enough
    assert "already has our journal" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("value", "message"),
    [("nan", "lock_timeout_s=nan: must be a finite number"), ("-1", "lock_timeout_s=-1.0 is negative")],
)
def test_the_adopt_command_names_a_bad_lock_timeout(theirs, capsys, value, message):
    before = tree(theirs)
    assert main([f"--root={theirs}", f"--lock_timeout_s={value}"]) == 2
    assert message in capsys.readouterr().err
    assert tree(theirs) == before
