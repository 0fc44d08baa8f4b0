"""The setup finds a Python >= 3.12 by itself, or stops with a message that says what to do."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

FINDER = Path(__file__).resolve().parents[1] / ".ci" / "find_python.sh"


def isolated_path(tmp_path: Path) -> str:
    """A PATH with the shell tools the script needs and no Python at all."""
    tools = tmp_path / "tools"
    tools.mkdir()
    for tool in ("bash", "ls", "sort", "cat", "env"):
        found = shutil.which(tool)
        if found:
            (tools / tool).symlink_to(found)
    return str(tools)


def test_finds_an_interpreter_of_at_least_3_12():
    result = subprocess.run([str(FINDER)], capture_output=True, text=True, check=True)
    interpreter = result.stdout.strip()
    version = subprocess.run(
        [interpreter, "-c", "import sys; print(sys.version_info[:2] >= (3, 12))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert version.stdout.strip() == "True"


def test_prefers_an_explicit_python(tmp_path):
    env = {"PATH": isolated_path(tmp_path), "PYTHON": sys.executable}
    result = subprocess.run([str(FINDER)], capture_output=True, text=True, env=env, check=True)
    assert Path(result.stdout.strip()).resolve() == Path(sys.executable).resolve()


def test_no_suitable_interpreter_gives_a_clear_message(tmp_path):
    old = tmp_path / "bin"
    old.mkdir()
    fake = old / "python3"
    fake.write_text("#!/bin/sh\nexit 1\n")  # a Python that is too old for the version check
    fake.chmod(0o755)
    env = {"PATH": f"{old}{os.pathsep}{isolated_path(tmp_path)}"}
    result = subprocess.run([str(FINDER)], capture_output=True, text=True, env=env)
    assert result.returncode == 1
    assert "no Python 3.12 or newer found" in result.stderr
    assert "pyenv install 3.12" in result.stderr
