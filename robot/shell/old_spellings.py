"""Spellings a command took before docs/command-line.md's vocabulary named them: accepted for one release.

    OLD_SPELLINGS = {"--dry-run": "--dry_run=true"}   # in the command's module, passed to its parser
    args = renamed(argv, OLD_SPELLINGS)               # one notice line per old spelling used

A command without a rig file reads its options from `--options_path`; `--config_path` names the rig
file in every command that has one, and is this release's old spelling of `--options_path` in the
others (`OPTIONS_FILE`). tests/test_vocabulary.py checks that each new spelling parses and that
each old one is in the table's "never" column.
"""

from collections.abc import Mapping

from robot.shell.say import say

OPTIONS_FLAG = "--options_path"
OPTIONS_FILE = {"--config_path": OPTIONS_FLAG}  # the old spelling in the commands without a rig file
# The control rate is the rig's (`--rig.fps`, the rig file's field): teleop, record, deploy and the
# doctor took it as `--fps`. The replay's `--fps` stays its own: the rate a recording is replayed at.
RIG_RATE = {"--fps": "--rig.fps"}


def renamed(argv: list[str], old: Mapping[str, str]) -> list[str]:
    """`argv` in this release's spellings, with one notice on stderr for each old spelling it used.

    A flag renamed to a flag keeps its value (`--config_path=f` and `--config_path f` both work); a
    bare flag may stand for a flag with its value (`--dry-run` -> `--dry_run=true`).
    """
    out: list[str] = []
    for arg in argv:
        flag, equals, value = arg.partition("=")
        new = old.get(flag)
        if new is None or (equals and "=" in new):
            out.append(arg)
            continue
        say(f"notice: {flag} is now spelled {new.split('=')[0]}; {flag} is accepted until the next release")
        out.append(new if "=" in new else new + equals + value)
    return out
