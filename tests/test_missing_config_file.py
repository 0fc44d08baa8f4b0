"""Every so101-* command given a --config_path that names no file: one line naming it, exit 2.

The commands are read from pyproject.toml's [project.scripts], so a command added later is covered.
draccus opens --config_path itself and a missing file used to end in a FileNotFoundError traceback
in so101-judge, -review, -report, -demo and -policy-server.
"""

import importlib
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]


@pytest.mark.parametrize("script", sorted(SCRIPTS))
@pytest.mark.parametrize("kind", ["missing", "folder"])
def test_a_config_path_that_names_no_file_is_one_line_and_exit_2(script, kind, tmp_path, capsys):
    module, _, function = SCRIPTS[script].partition(":")
    main = getattr(importlib.import_module(module), function)
    path = tmp_path / "rig.yaml" if kind == "missing" else tmp_path
    assert main([f"--config_path={path}"]) == 2
    captured = capsys.readouterr()
    lines = [line for line in (captured.out + captured.err).splitlines() if line.strip()]
    text = " ".join(" ".join(lines).split())  # a long line may wrap in a narrow console
    assert "Traceback" not in text
    assert text.startswith("error:"), text
    assert str(path) in text
    assert len(lines) <= 2, lines  # one message (wrapped at most once)
