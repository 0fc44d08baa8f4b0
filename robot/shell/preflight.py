"""What every command's shell does before draccus parses: help, unknown options, lists.

    rest = prepared_args(config_cls, argv, doc=__doc__, config_file=..., file_flag="--options_path")

draccus answers `--help` with its usage block and a typo with the whole usage; here each is handled
first, the same way in every command (robot/shell/parse.py calls this). The file flag is taken out
of `argv` before: its check names the file.
"""

import sys
from collections.abc import Mapping

from robot.shell.errors import UsageError
from robot.shell.exit_codes import Exit
from robot.shell.help import command_help, help_requested
from robot.shell.lists import normalized_lists
from robot.shell.option_names import unknown_option
from robot.shell.text_options import quoted_text


def prepared_args(
    config_cls: type,
    argv: list[str],
    *,
    doc: str | None,
    config_file: str,
    file_flag: str,
    exit_status: str,
    collapsed: Mapping[str, str] = {},
) -> list[str]:
    """`argv` checked, its lists in draccus's form and its text options quoted; `--help` is printed here and exits 0.

    `doc`: the command's module docstring (the top of its help; None: that of the options' module);
    `config_file`: what the file `file_flag` names holds; `exit_status` and `collapsed`: as
    robot/shell/help.py's `command_help`.

    Raises:
        UsageError: an unknown option (with the closest real ones), or a list item that is no
            number where numbers are expected.
    """
    if (topic := help_requested(argv)) is not None:
        text = command_help(
            config_cls,
            config_file=config_file,
            file_flag=file_flag,
            doc=doc,
            exit_status=exit_status,
            collapsed=collapsed,
            topic=topic,
        )
        sys.stdout.write(text)
        raise SystemExit(Exit.DONE)
    if (unknown := unknown_option(config_cls, argv)) is not None:
        raise UsageError(unknown)
    try:
        return quoted_text(config_cls, normalized_lists(config_cls, argv))
    except ValueError as e:
        raise UsageError(str(e)) from e
