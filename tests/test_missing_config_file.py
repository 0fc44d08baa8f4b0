"""Every so101-* command given a file flag that names no file: one line naming it, exit 2.

The file flag is `--config_path` (the rig file) for the commands that drive the rig, `--options_path`
(an options file) for the others, where `--config_path` is this release's old spelling. The commands
are read from pyproject.toml's [project.scripts], so a command added later is covered. draccus opens
its config file itself and a missing file used to end in a FileNotFoundError traceback in
so101-judge, -review, -report, -demo and -policy-server.
"""

import importlib
import os
import tomllib
from pathlib import Path

import pytest

from robot.shell.exit_codes import Exit
from tests.support.command_configs import file_flag

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]


@pytest.mark.parametrize("script", sorted(SCRIPTS))
@pytest.mark.parametrize("kind", ["missing", "folder", "fifo", "below_a_file", "symlink_loop"])
def test_a_file_flag_that_names_no_file_is_one_line_and_exit_2(script, kind, tmp_path, capsys):
    module, _, function = SCRIPTS[script].partition(":")
    main = getattr(importlib.import_module(module), function)
    path = _unreadable(kind, tmp_path)
    assert main([f"{file_flag(script)}={path}"]) == Exit.USAGE
    captured = capsys.readouterr()
    assert captured.out == ""  # the error is on stderr, printed once by the shell
    lines = [line for line in captured.err.splitlines() if line.strip()]
    text = " ".join(" ".join(lines).split())  # a long line may wrap in a narrow console
    assert "Traceback" not in text
    assert text.startswith("error:"), text
    assert str(path) in text
    assert len(lines) <= 2, lines  # one message (wrapped at most once)


def _unreadable(kind: str, tmp_path: Path) -> Path:
    """A path that is no readable YAML file. A FIFO exists but is not a file (opening it would block)."""
    if kind == "missing":
        return tmp_path / "rig.yaml"
    if kind == "folder":
        return tmp_path
    if kind == "fifo":
        os.mkfifo(tmp_path / "rig.yaml")
        return tmp_path / "rig.yaml"
    if kind == "symlink_loop":  # stat fails for root too: "too many levels of symbolic links"
        (tmp_path / "rig.yaml").symlink_to(tmp_path / "rig.yaml")
        return tmp_path / "rig.yaml"
    (tmp_path / "rig.yaml").write_text("rig: {}\n")
    return tmp_path / "rig.yaml" / "inner.yaml"  # stat says "not a directory"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
@pytest.mark.parametrize("script", ["so101-record", "so101-judge"])
def test_a_config_path_that_cannot_be_read_is_one_line_and_exit_2(script, tmp_path, capsys):
    module, _, function = SCRIPTS[script].partition(":")
    main = getattr(importlib.import_module(module), function)
    path = tmp_path / "rig.yaml"
    path.write_text("rig: {}\n")
    path.chmod(0)
    assert main([f"{file_flag(script)}={path}"]) == Exit.USAGE
    text = " ".join(capsys.readouterr().err.split())
    assert "cannot be read (Permission denied)" in text
    assert str(path) in text


@pytest.mark.parametrize("script", ["so101-judge", "so101-report", "so101-demo"])
def test_the_old_spelling_of_the_options_file_works_with_a_notice(script, tmp_path, capsys):
    module, _, function = SCRIPTS[script].partition(":")
    main = getattr(importlib.import_module(module), function)
    assert main([f"--config_path={tmp_path / 'options.yaml'}"]) == Exit.USAGE
    notice, error = capsys.readouterr().err.strip().splitlines()
    assert (
        notice
        == "notice: --config_path is now spelled --options_path; --config_path is accepted until the next release"
    )
    assert error.startswith(f"error: --options_path={tmp_path / 'options.yaml'} does not exist"), error
