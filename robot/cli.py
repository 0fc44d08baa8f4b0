"""Command-line plumbing shared by every `so101-*` command.

LeRobot's convention, with the rig file as the config: `--config_path=hardware_configs/<rig>.yaml`
loads the rig, dotted flags override it (`--rig.bus.read_deadline_ms=30`) and set the command's
own options (`--arms=left_follower`). `--help` says what the command does, with examples, and lists
its options (robot/cli_help.py).

Errors reach the user as one line that says what to do, never as a traceback. Exit status, the
same for every command (the shell's convention for a signal, as if it had killed us):

    0      done
    1      failed: the line on stderr says what, and what to do next
    2      usage: the command line or the rig file is not valid (nothing ran)
    128+n  stopped by signal n after the same safe exit as Ctrl-C (robot/signals.py):
           130 Ctrl-C (SIGINT), 129 SIGHUP, 143 SIGTERM; twice in a row: e-stopped, exited at once
"""

import dataclasses
import logging
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from contextlib import nullcontext, suppress
from pathlib import Path

import draccus
import yaml

from robot.config import DEFAULT_RIG_FILE, RigConfig
from robot.errors import ConfigError, RobotError
from robot.parse_errors import explain_parse_error, flag_named
from robot.shell.files import why_unreadable
from robot.shell.help import command_help, help_requested
from robot.shell.lists import normalized_lists
from robot.shell.option_names import unknown_option
from robot.shell.preflight import ShellError, prepared_args
from robot.shell.rig_flag import config_path_of, with_config_path
from robot.signals import SignalStop, StopSignals

logger = logging.getLogger(__name__)
EXIT_DONE = 0
EXIT_FAILED = 1
EXIT_USAGE = 2  # as argparse (draccus) exits for an unknown flag
EXIT_STATUS = (
    "Exit status: 0 done; 1 failed (the line on stderr says what, and what to do next); 2 usage (the command "
    "line or the rig file is not valid, nothing ran); 128+n stopped by signal n after the safe exit "
    "(130 Ctrl-C, 143 SIGTERM, 129 SIGHUP)."
)
OPTIONS_FILE_HELP = "a YAML file of these options (sections as nested mappings); flags given here override it"
RIG_FILE_HELP = "the rig file (default: hardware_configs/virtual.yaml, the virtual rig)"
RIG_FIELDS_HELP = "the rig file's fields, e.g. --rig.bus.read_deadline_ms=30; hardware_configs/README.md explains each"


class UsageError(ConfigError):
    """The command line or the rig file is not valid: nothing ran (exit status 2)."""


def _split_config_path(argv: list[str]) -> tuple[Path, list[str]]:
    rest: list[str] = []
    path = DEFAULT_RIG_FILE
    args = iter(argv)
    for arg in args:
        if arg.startswith("--config_path="):
            path = Path(arg.split("=", 1)[1])
        elif arg == "--config_path":
            path = Path(next(args, ""))
        else:
            rest.append(arg)
    return path, rest


# The policy server's settings are many and matter only with --engine.kind=remote: one line in --help.
REMOTE_HELP = "with --engine.kind=remote: the policy server's host, port, checkpoint and timeouts"


def parse_command[T](config_cls: type[T], argv: list[str] | None = None) -> T:
    """Parse a command config whose `rig` field comes from `--config_path` (default: virtual rig).

    Raises:
        UsageError: the rig file is missing, not YAML, or holds a value that is not allowed.
    """
    args = sys.argv[1:] if argv is None else argv
    path, rest = _split_config_path(args)
    if (topic := help_requested(rest)) is not None:
        text = command_help(
            config_cls,
            config_file=RIG_FILE_HELP,
            exit_status=EXIT_STATUS,
            collapsed={"rig": RIG_FIELDS_HELP, "remote": REMOTE_HELP},
            topic=topic,
        )
        sys.stdout.write(text)
        raise SystemExit(EXIT_DONE)
    if (unknown := unknown_option(config_cls, rest)) is not None:
        raise UsageError(unknown)
    rest = _lists(config_cls, rest)
    if (what := why_unreadable(path)) is not None:  # before reading: a FIFO would block the read
        raise UsageError(
            f"--config_path={path} {what}. Next: give the rig file's path (hardware_configs/README.md), "
            "or drop --config_path to use the virtual rig"
        )
    try:
        rig = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        raise UsageError(f"cannot read rig file {path}: {e}") from e
    if not isinstance(rig, dict):
        raise UsageError(f"{path}: expected a mapping of rig settings (see hardware_configs/README.md)")
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as wrapped:
        yaml.safe_dump({"rig": rig}, wrapped)
        wrapped.flush()
        try:
            config = draccus.parse(config_cls, config_path=wrapped.name, args=rest)
        except (draccus.utils.ParsingError, draccus.utils.DecodingError, ValueError, TypeError) as e:
            message = explain_parse_error(e, config_cls)
            flag = flag_named(message, rest)
            source = f"the command line ({flag})" if flag else str(path)
            raise UsageError(f"{source}: {message}") from e
    return at_command_fps(config)


def parse_options[T](config_cls: type[T], argv: list[str], example: str, *, doc: str) -> T:
    """Parse a command config that has no rig (so101-demo, so101-policy-server): the same shell as `parse_command`.

    `example`: a command line that needs no config file, shown as the next step; `doc`: the command's
    module docstring, the top of its `--help`.

    Raises:
        UsageError: an unknown option, an unreadable `--config_path`, or a value that is not allowed.
    """
    try:
        argv = prepared_args(
            config_cls, argv, doc=doc, config_file=OPTIONS_FILE_HELP, example=example, exit_status=EXIT_STATUS
        )
    except ShellError as e:
        raise UsageError(str(e)) from e
    try:
        return draccus.parse(config_cls, args=argv)
    except (draccus.utils.ParsingError, draccus.utils.DecodingError, ValueError, TypeError) as e:
        message = explain_parse_error(e, config_cls)
        flag = flag_named(message, argv)
        raise UsageError(f"the command line ({flag}): {message}" if flag else message) from e


def _lists(config_cls: type, argv: list[str]) -> list[str]:
    """`argv` with every list option in draccus's form (robot/shell/lists.py), or a UsageError naming the option."""
    try:
        return normalized_lists(config_cls, argv)
    except ValueError as e:
        raise UsageError(str(e)) from e


def at_command_fps[T](config: T) -> T:
    """`config` with its rig at the command's `--fps`, if it has one and it was given: the one place it applies.

    Every consumer then reads the rate from the rig (`config.rig.fps`), never from `config.fps`.

    Raises:
        UsageError: a camera of the rig cannot feed a loop at that rate.
    """
    fps = getattr(config, "fps", None)
    rig = getattr(config, "rig", None)
    if fps is None or not isinstance(rig, RigConfig) or not dataclasses.is_dataclass(config):
        return config
    try:
        return dataclasses.replace(config, rig=rig.at_fps(fps))
    except ConfigError as e:
        raise UsageError(f"the command line (--fps={fps}): {e}") from e


def run_command(
    main: Callable[[], int | None], stops: StopSignals | None = None, args: Sequence[str] | None = None
) -> int:
    """Run a command's body; returns its exit status (see the module docstring).

    Typed errors become one clear line on stderr; a failure's line gets the `--config_path` of `args`
    (the command's arguments; default sys.argv[1:]) added to each rig command it names (rig_flag.py).
    With `stops`, SIGINT, SIGTERM and SIGHUP are handled while the body runs (robot/signals.py); a
    command stopped by one exits 128 + its number, unless it then failed (1). After an escalation (a
    second signal) the process exits here at once, so nothing waits for the dataset writer: it
    finishes a save in progress on its own.
    """
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    with stops if stops is not None else nullcontext():
        code, failed = _run(main, stops, config_path_of(sys.argv[1:] if args is None else args))
    if stops is not None and stops.exit_code is not None and not failed:
        code = stops.exit_code
    if stops is not None and stops.escalated:
        for stream in (sys.stdout, sys.stderr):
            with suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)  # no atexit: the writer process must not be waited for
    return code


def _run(main: Callable[[], int | None], stops: StopSignals | None, config_path: str | None) -> tuple[int, bool]:
    """The body's status, and whether it failed with an error."""
    try:
        return main() or EXIT_DONE, False
    except SignalStop as stop:
        reason = stops.reason if stops is not None and stops.reason else str(stop)
        _say(f"\nstopped by {reason}")
        return 128 + stop.signum, False
    except KeyboardInterrupt:
        _say("\ninterrupted")
        return 128 + 2, False
    except UsageError as e:
        _say(f"error: {e}")  # about the options themselves, --config_path included: left as written
        return EXIT_USAGE, True
    except RobotError as e:
        _say(f"error: {with_config_path(str(e), config_path)}")
        return EXIT_FAILED, True


def _say(line: str) -> None:
    """A line on stderr; a closed terminal or pipe is not an error of the command."""
    with suppress(OSError):
        print(line, file=sys.stderr)
