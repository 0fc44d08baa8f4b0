"""How so101-judge, so101-review and so101-report read their options: the shell every command shares.

robot/shell/preflight.py answers `--help`, a typo ("did you mean"), an unreadable `--config_path`
(draccus opens it itself: a traceback) and the list syntax first; then draccus parses. draccus
wraps our own validation errors (a ConfigError raised in a config's `__post_init__`) in its
DecodingError: `root_cause` finds ours, so the message shown is ours when there is one.
"""

from __future__ import annotations

from collections.abc import Mapping

import draccus

from evaluation.errors import ConfigError, EvaluationError
from robot.shell.preflight import ShellError, prepared_args

OPTIONS_FILE = "a YAML file of these options (sections as nested mappings); flags given here override it"


def parse_options[T](
    config_cls: type[T], argv: list[str], *, doc: str, example: str, collapsed: Mapping[str, str] = {}
) -> T:
    """`--help` (printed, exit 0), else the options parsed, after the checks draccus does not make.

    `doc`: the command's module docstring; `example`: a command line that needs no config file, shown
    as the next step; `collapsed`: sections `--help` shows as one line (robot/shell/help.py).

    Raises:
        ConfigError: an unknown option (with the closest real ones), an unreadable `--config_path`, a bad list.
        draccus.utils.DecodingError, draccus.utils.ParsingError: a value that does not parse.
    """
    try:
        argv = prepared_args(config_cls, argv, doc=doc, config_file=OPTIONS_FILE, example=example, collapsed=collapsed)
    except ShellError as e:
        raise ConfigError(str(e)) from e
    return draccus.parse(config_class=config_cls, args=argv)


def root_cause(error: BaseException) -> BaseException:
    """The first of our own errors in the cause chain (draccus wraps validation errors), else the error."""
    current: BaseException | None = error
    while current is not None:
        if isinstance(current, EvaluationError):
            return current
        current = current.__cause__
    return error
