"""How so101-judge, so101-review and so101-report read their options: the shell every command shares.

robot/shell/ gives the help layout, "did you mean" and why a file cannot be read; here they meet
draccus. draccus opens `--config_path` itself and a missing file ends in a traceback; it also wraps
our own validation errors (a ConfigError raised in a config's `__post_init__`) in its DecodingError.
Here a missing or unreadable file is one line naming it, and the message shown is ours when there is one.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

import draccus

from evaluation.errors import ConfigError, EvaluationError
from robot.shell.files import config_path_arg, why_unreadable
from robot.shell.help import command_help, help_requested
from robot.shell.lists import normalized_lists
from robot.shell.option_names import unknown_option

EXIT_DONE = 0
OPTIONS_FILE = "a YAML file of these options (sections as nested mappings); flags given here override it"


def parse_options[T](
    config_cls: type[T], argv: list[str], *, doc: str, example: str, collapsed: Mapping[str, str] = {}
) -> T:
    """`--help` (printed, exit 0), else the options parsed, after the checks draccus does not make.

    `doc`: the command's module docstring; `example`: a command line that needs no config file, shown
    as the next step; `collapsed`: sections `--help` shows as one line (robot/shell/help.py).

    Raises:
        ConfigError: an unknown option (with the closest real ones) or an unreadable `--config_path`.
        draccus.utils.DecodingError, draccus.utils.ParsingError: a value that does not parse.
    """
    if (topic := help_requested(argv)) is not None:
        text = command_help(config_cls, config_file=OPTIONS_FILE, doc=doc, collapsed=collapsed, topic=topic)
        sys.stdout.write(text)
        raise SystemExit(EXIT_DONE)
    if (unknown := unknown_option(config_cls, argv)) is not None:
        raise ConfigError(unknown)
    check_config_path(argv, example)
    try:
        argv = normalized_lists(config_cls, argv)  # one list syntax: a,b or [a,b]; ranges; `all` episodes
    except ValueError as e:
        raise ConfigError(str(e)) from e
    return draccus.parse(config_class=config_cls, args=argv)


def check_config_path(argv: list[str], example: str) -> None:
    """Refuse a `--config_path` that names no readable file, before draccus opens it.

    `example`: a command line that works without the file, shown as the next step.

    Raises:
        ConfigError: naming the path and what to do.
    """
    path = config_path_arg(argv)
    if path is None:
        return
    if (what := why_unreadable(path)) is not None:
        raise ConfigError(f"--config_path={path} {what}. Next: give the YAML file's path, or drop it: {example}")


def root_cause(error: BaseException) -> BaseException:
    """The first of our own errors in the cause chain (draccus wraps validation errors), else the error."""
    current: BaseException | None = error
    while current is not None:
        if isinstance(current, EvaluationError):
            return current
        current = current.__cause__
    return error
