"""Every so101-* command given a --config_path that names no file: one line naming it, exit 2.

The commands are read from pyproject.toml's [project.scripts], so a command added later is covered.
draccus opens --config_path itself and a missing file used to end in a FileNotFoundError traceback
in so101-judge, -review, -report, -demo and -policy-server.
"""

import importlib
import os
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]


@pytest.mark.parametrize("script", sorted(SCRIPTS))
@pytest.mark.parametrize("kind", ["missing", "folder", "fifo", "below_a_file", "symlink_loop"])
def test_a_config_path_that_names_no_file_is_one_line_and_exit_2(script, kind, tmp_path, capsys):
    module, _, function = SCRIPTS[script].partition(":")
    main = getattr(importlib.import_module(module), function)
    path = _unreadable(kind, tmp_path)
    assert main([f"--config_path={path}"]) == 2
    captured = capsys.readouterr()
    lines = [line for line in (captured.out + captured.err).splitlines() if line.strip()]
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
    assert main([f"--config_path={path}"]) == 2
    text = " ".join(capsys.readouterr().err.split())
    assert "cannot be read (Permission denied)" in text
    assert str(path) in text
