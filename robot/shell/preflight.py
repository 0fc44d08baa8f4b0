"""What every command's shell does before draccus parses: help, unknown options, the file, lists.

    argv = prepared_args(config_cls, argv, doc=__doc__, config_file=..., example="so101-x --a=b")

draccus answers `--help` with its usage block, a typo with the whole usage, and a missing
`--config_path` with a traceback; here each is handled first, the same way in every command. The
caller turns a `ShellError` into its own typed error (robot's UsageError, evaluation's ConfigError):
one line, exit 2.
"""

import sys
from collections.abc import Mapping

from robot.shell.files import config_path_arg, why_unreadable
from robot.shell.help import command_help, help_requested
from robot.shell.lists import normalized_lists
from robot.shell.option_names import unknown_option

EXIT_DONE = 0


class ShellError(ValueError):
    """A command line the shell refuses before anything runs (a typo, an unreadable file, a bad list)."""


def prepared_args(
    config_cls: type,
    argv: list[str],
    *,
    doc: str,
    config_file: str,
    example: str,
    exit_status: str = "",
    collapsed: Mapping[str, str] = {},
) -> list[str]:
    """`argv` checked and with its lists in draccus's form; `--help` is printed here and exits 0.

    `doc`: the command's module docstring (the top of its help); `config_file`: what `--config_path`
    reads; `example`: a command line that needs no file, shown as the next step; `exit_status` and
    `collapsed`: as robot/shell/help.py's `command_help`.

    Raises:
        ShellError: an unknown option (with the closest real ones), an unreadable `--config_path`, or
            a list item that is no number where numbers are expected.
    """
    if (topic := help_requested(argv)) is not None:
        text = command_help(
            config_cls, config_file=config_file, doc=doc, exit_status=exit_status, collapsed=collapsed, topic=topic
        )
        sys.stdout.write(text)
        raise SystemExit(EXIT_DONE)
    if (unknown := unknown_option(config_cls, argv)) is not None:
        raise ShellError(unknown)
    path = config_path_arg(argv)
    if path is not None and (what := why_unreadable(path)) is not None:
        raise ShellError(f"--config_path={path} {what}. Next: give the YAML file's path, or drop it: {example}")
    try:
        return normalized_lists(config_cls, argv)
    except ValueError as e:
        raise ShellError(str(e)) from e
