"""One name per concept across every so101-* command, as docs/command-line.md's table writes it down.

The table is the vocabulary: each row names a concept, its one spelling (`--dataset.root`, or
`*.output_dir` for a last part in whichever section holds it), the commands that take it, and the
spellings it must never have. The commands are read from pyproject.toml, their options from their
config dataclasses (robot/shell/option_names.py), so a command or option added later is checked.
"""

import re
from pathlib import Path

import pytest

from robot.shell.old_spellings import OPTIONS_FILE, renamed
from robot.shell.option_names import ALWAYS, option_names, unknown_option
from robot.shell.rig_flag import RIG_COMMANDS
from tests.support.command_configs import SCRIPTS, command_main, config_class

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "docs" / "command-line.md"


def _rows() -> list[tuple[str, str, list[str], list[str]]]:
    """(concept, spelling, commands, never) for every row of the vocabulary table."""
    rows = []
    for line in TABLE.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("concept", "---") or not cells[1].startswith("`"):
            continue
        spelling = re.findall(r"`([^`]+)`", cells[1])[0]
        never = re.findall(r"`([^`]+)`", cells[3])
        rows.append((cells[0], spelling, [c.strip() for c in cells[2].split(",")], never))
    return rows


def _options(command: str) -> set[str]:
    names = set(option_names(config_class(f"so101-{command}"))) - ALWAYS
    return names | ({"config_path"} if command in RIG_COMMANDS else {"options_path"})


def _matches(spelling: str, name: str) -> bool:
    """`--a.b` is that option exactly; `*.leaf` is any option whose last part is `leaf`."""
    if spelling.startswith("*."):
        leaf = spelling[2:]
        return name == leaf or name.endswith(f".{leaf}")
    return name == spelling.removeprefix("--")


COMMANDS = sorted(script.removeprefix("so101-") for script in SCRIPTS)
ROWS = _rows()


def test_the_table_is_there_and_names_real_commands():
    assert len(ROWS) >= 15
    named = {command for _, _, commands, _ in ROWS for command in commands}
    assert named <= set(COMMANDS), named - set(COMMANDS)


@pytest.mark.parametrize(("concept", "spelling", "commands", "never"), ROWS, ids=[row[0] for row in ROWS])
def test_each_concept_has_one_spelling_in_every_command(concept, spelling, commands, never):
    lacking = [c for c in commands if not any(_matches(spelling, name) for name in _options(c))]
    assert lacking == [], f"{concept}: {spelling} missing in {lacking}"
    spelled_otherwise = sorted(
        f"so101-{command} --{name}"
        for command in COMMANDS
        for name in _options(command)
        for wrong in never
        if _matches(wrong, name)
    )
    assert spelled_otherwise == [], f"{concept} is {spelling}, not: {spelled_otherwise}"


def test_no_two_options_differ_only_in_dots_and_underscores():
    # `--store.path` in one command and `--store_path` in another is one concept spelled two ways.
    spellings: dict[str, set[str]] = {}
    for command in COMMANDS:
        for name in _options(command):
            spellings.setdefault(name.replace(".", "_"), set()).add(name)
    assert {key: names for key, names in spellings.items() if len(names) > 1} == {}


def test_the_checker_catches_a_second_spelling():
    assert _matches("--store.path", "store.path")
    assert _matches("*.overlap", "remote.overlap")
    assert not _matches("*.overlap", "overlapping")
    assert not _matches("--dataset_root", "dataset.root")


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_each_old_spelling_names_an_option_of_the_new_vocabulary(script):
    module = __import__(command_main(script).__module__, fromlist=["_"])
    old = {
        **getattr(module, "OLD_SPELLINGS", {}),
        **({} if script.removeprefix("so101-") in RIG_COMMANDS else OPTIONS_FILE),
    }
    never = {wrong for _, _, _, nevers in ROWS for wrong in nevers}
    # An old spelling is in the table: in a never column, or as another command's spelling of its own
    # concept (`--config_path` is the rig file where there is one; `--fps` is the replay's rate).
    current = {spelling for _, spelling, _, _ in ROWS}
    for spelling, new in old.items():
        if new.split("=", 1)[0] != "--options_path":  # the file flag is the shell's, not an option field
            assert unknown_option(config_class(script), [new]) is None, (script, new)
        assert spelling in never | current, f"{spelling}: add it to a row's never column"


def test_an_old_spelling_becomes_the_new_one_with_a_notice(capsys):
    old = {"--dry-run": "--dry_run=true", "--config_path": "--options_path"}
    args = ["--dry-run", "--config_path=a.yaml", "--config_path", "b.yaml", "--dry_run=false", "--x=1"]
    assert renamed(args, old) == [
        "--dry_run=true",
        "--options_path=a.yaml",
        "--options_path",
        "b.yaml",
        "--dry_run=false",
        "--x=1",
    ]
    notices = capsys.readouterr().err.splitlines()
    assert notices[0] == "notice: --dry-run is now spelled --dry_run; --dry-run is accepted until the next release"
    assert len(notices) == 3  # one per use
