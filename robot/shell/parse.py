"""The one parser of every so101-* command: the shell's checks, then draccus, every refusal a UsageError.

    config = parse_options(JudgeCommandConfig, argv, doc=__doc__, example="so101-judge --dataset.root=<dataset>")

A command without a rig reads its options file from `--options_path` (`parse_options`); a command
with a rig reads the rig file from `--config_path` into its `rig` section (robot/cli.py's
`parse_command`). Both end in `parse_args`, so a value refused says the same thing everywhere: the
flag that set it, or the file it came from.
"""

from collections.abc import Mapping
from pathlib import Path

import draccus
import yaml

from robot.shell.errors import UsageError
from robot.shell.exit_codes import EXIT_STATUS
from robot.shell.files import flag_value, why_unreadable
from robot.shell.old_spellings import OPTIONS_FILE, OPTIONS_FLAG, renamed
from robot.shell.parse_errors import explain_parse_error, flag_named
from robot.shell.preflight import prepared_args

OPTIONS_FILE_HELP = "a YAML file of these options; flags given here override it"
_DRACCUS_ERRORS = (draccus.utils.ParsingError, draccus.utils.DecodingError, yaml.YAMLError, ValueError, TypeError)


def parse_options[T](
    config_cls: type[T],
    argv: list[str],
    *,
    doc: str,
    example: str,
    collapsed: Mapping[str, str] = {},
    old_spellings: Mapping[str, str] = {},
) -> T:
    """`--help` (printed, exit 0), else the options of a command without a rig.

    `doc`: the command's module docstring, the top of its help; `example`: a command line that needs
    no file, shown as the next step; `collapsed`: sections the help shows as one line
    (robot/shell/help.py); `old_spellings`: this command's renamed flags (robot/shell/old_spellings.py).

    Raises:
        UsageError: an unknown option (with the closest real ones), an unreadable options file, a bad
            list, or a value that is not allowed.
    """
    args = renamed(argv, {**OPTIONS_FILE, **old_spellings})
    path, rest = flag_value(args, OPTIONS_FLAG)
    rest = prepared_args(
        config_cls,
        rest,
        doc=doc,
        config_file=OPTIONS_FILE_HELP,
        file_flag=OPTIONS_FLAG,
        exit_status=EXIT_STATUS,
        collapsed=collapsed,
    )
    if path is not None and (what := why_unreadable(path)) is not None:
        raise UsageError(f"{OPTIONS_FLAG}={path} {what}. Next: give the YAML file's path, or drop it: {example}")
    return parse_args(config_cls, rest, config_path=path, source=path)


def parse_args[T](config_cls: type[T], args: list[str], *, config_path: Path | None, source: Path | None) -> T:
    """The options `args` set over the file `config_path`, parsed by draccus; a refusal names the flag, else `source`.

    Raises:
        UsageError: a value that does not parse or is not allowed (our own check's message when a
            config's `__post_init__` raised it).
    """
    try:
        return draccus.parse(config_class=config_cls, config_path=config_path, args=args)
    except _DRACCUS_ERRORS as e:
        # A value that is no YAML (`--server.host=[::1]`): its whole message, on one line.
        message = " ".join(str(e).split()) if isinstance(e, yaml.YAMLError) else explain_parse_error(e, config_cls)
        if (flag := flag_named(message, args)) is not None:
            raise UsageError(f"the command line ({flag}): {message}") from e
        raise UsageError(f"{source}: {message}" if source is not None else message) from e
