"""so101-demo empties its folder at start: only one it made (or an empty one), never someone else's files."""

import pytest

from policies.commands.demo import main
from policies.demo.layout import MARKER, check_output_dir
from robot.cli import UsageError


def test_a_folder_with_someone_elses_files_is_refused_and_nothing_is_deleted(tmp_path, capsys):
    (tmp_path / "thesis.tex").write_text("three years of work")
    (tmp_path / "data").mkdir()
    assert main([f"--output_dir={tmp_path}", "--num_episodes=1"]) == 2
    err = capsys.readouterr()
    text = (err.out + err.err).strip()
    assert len(text.splitlines()) == 1, text
    assert "nothing was deleted" in text
    assert "--output_dir=outputs/demo" in text  # the next step, as a flag
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "thesis.tex"]
    assert (tmp_path / "thesis.tex").read_text() == "three years of work"


def test_a_file_is_refused(tmp_path):
    target = tmp_path / "notes.txt"
    target.write_text("keep me")
    with pytest.raises(UsageError, match="is a file"):
        check_output_dir(target)
    assert target.read_text() == "keep me"


def test_a_new_an_empty_and_a_demo_folder_are_accepted(tmp_path):
    check_output_dir(tmp_path / "new")
    (tmp_path / "empty").mkdir()
    check_output_dir(tmp_path / "empty")
    marked = tmp_path / "marked"
    marked.mkdir()
    (marked / MARKER).write_text("")
    (marked / "datasets").mkdir()
    check_output_dir(marked)
    older = tmp_path / "older"  # a demo folder written before the marker existed
    older.mkdir()
    (older / "rig.yaml").write_text("# Written by so101-demo: virtual.yaml with the demo's folders\nid: demo\n")
    check_output_dir(older)
