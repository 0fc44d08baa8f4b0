"""One table of exit codes for every so101-* command, documented, and what each command exits with.

robot/shell/exit_codes.py is the table; docs/command-line.md prints it; every command's `--help`
ends with it in one sentence (tests/test_command_help.py). Here every command from pyproject.toml
is run (in-process, nothing starts) with a mistyped option and with a file flag that names no file,
and so101-judge without an API key: each ends in its documented code with one `error:` line on
stderr. tests/test_missing_config_file.py runs the other kinds of unreadable file.
"""

import ast
import re
from pathlib import Path

import pytest

from evaluation.testing.synthetic_dataset import Scenario, write_synthetic_dataset
from robot.shell.exit_codes import MEANINGS, Exit, stopped_by, table_lines
from tests.support.command_configs import ROOT, SCRIPTS, command_main, file_flag

PRODUCT = ("robot", "teleop", "policies", "evaluation")


def _error_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("error: "), lines[0]
    assert "Traceback" not in captured.out + captured.err
    return lines[0]


def test_the_document_shows_the_table():
    text = (ROOT / "docs" / "command-line.md").read_text()
    section = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    block = next(b for b in section.split("\n\n") if b.startswith("    0 "))
    assert block.splitlines() == table_lines()


def test_the_codes_are_the_shells_and_sysexits():
    assert [int(code) for code in MEANINGS] == [0, 1, 2, 3, 75]  # 75: EX_TEMPFAIL, "try again later"
    assert stopped_by(2) == 130  # Ctrl-C, as the shell reports a process killed by SIGINT


def test_no_command_keeps_exit_codes_of_its_own():
    own = []
    for layer in PRODUCT:
        for path in sorted((ROOT / layer).rglob("*.py")):
            if path == ROOT / "robot" / "shell" / "exit_codes.py":
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                targets = node.targets if isinstance(node, ast.Assign) else []
                names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
                own += [f"{path.relative_to(ROOT)}: {name}" for name in names if re.match(r"EXIT_[A-Z_]+$", name)]
    assert own == []  # every command returns robot/shell/exit_codes.py's Exit


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_a_mistyped_option_is_usage(script, capsys):
    assert command_main(script)(["--no_such_option=1"]) == Exit.USAGE
    assert "unknown option --no_such_option" in _error_line(capsys)


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_a_file_flag_naming_no_file_is_usage(script, tmp_path, capsys):
    missing = tmp_path / "missing.yaml"
    assert command_main(script)([f"{file_flag(script)}={missing}"]) == Exit.USAGE
    assert f"{missing} does not exist" in _error_line(capsys)


def test_a_missing_api_key_fails_with_the_ways_on(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    root = write_synthetic_dataset(tmp_path / "fold", (Scenario.FOLD_AND_PUSH,), frames_per_episode=30)
    capsys.readouterr()  # what writing the dataset printed
    judge = command_main("so101-judge")
    assert judge([f"--dataset.root={root}", f"--store_path={tmp_path / 's.sqlite'}"]) == Exit.FAILED
    line = _error_line(capsys)
    assert "ANTHROPIC_API_KEY is not set" in line
    assert "--dry_run=true" in line  # the offline ways on, as commands that paste
    assert "--scorer=heuristic" in line
    assert not Path(tmp_path / "s.sqlite").exists()  # nothing was started
