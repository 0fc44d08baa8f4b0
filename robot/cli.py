"""Command-line plumbing of the commands that drive the rig: its file, the run, the signals.

LeRobot's convention, with the rig file as the config: `--config_path=hardware_configs/<rig>.yaml`
loads the rig, dotted flags override it (`--rig.bus.read_deadline_ms=30`) and set the command's
own options (`--arms=left_follower`). The shell itself (help, did-you-mean, lists, the parse, the
exit codes, the error line) is robot/shell/, the same for every command.

Errors reach the user as one line that says what to do, never as a traceback. Exit status: the one
table in robot/shell/exit_codes.py (0 done, 1 failed, 2 usage, 128+n stopped by signal n after the
same safe exit as Ctrl-C, robot/signals.py: 130 Ctrl-C, 129 SIGHUP, 143 SIGTERM; twice in a row:
e-stopped, exited at once).
"""

import dataclasses
import logging
import os
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext, suppress
from pathlib import Path

import yaml

from robot.config import DEFAULT_RIG_FILE, RigConfig
from robot.errors import ConfigError
from robot.shell.errors import UsageError
from robot.shell.exit_codes import EXIT_STATUS
from robot.shell.files import flag_value, why_unreadable
from robot.shell.old_spellings import renamed
from robot.shell.parse import parse_args
from robot.shell.preflight import prepared_args
from robot.shell.rig_flag import config_path_of, with_config_path
from robot.shell.run import run_body
from robot.signals import SignalStop, StopSignals

__all__ = ["UsageError", "at_command_fps", "parse_command", "run_command"]

logger = logging.getLogger(__name__)
RIG_FILE_HELP = "the rig file (default: hardware_configs/virtual.yaml, the virtual rig)"
RIG_FIELDS_HELP = "the rig file's fields, e.g. --rig.bus.read_deadline_ms=30; hardware_configs/README.md explains each"
# The policy server's settings are many and matter only with --engine.kind=remote: one line in --help.
REMOTE_HELP = "with --engine.kind=remote: the policy server's host, port, checkpoint and timeouts"


def parse_command[T](
    config_cls: type[T], argv: list[str] | None = None, *, old_spellings: Mapping[str, str] = {}, doc: str | None = None
) -> T:
    """Parse a command config whose `rig` field comes from `--config_path` (default: virtual rig).

    `old_spellings`: the command's renamed flags, accepted for one release (robot/shell/old_spellings.py);
    `doc`: the top of `--help` (default: the docstring of the module defining `config_cls`).

    Raises:
        UsageError: an unknown option, a bad list, the rig file is missing, not YAML, or holds a value
            that is not allowed.
    """
    args = renamed(sys.argv[1:] if argv is None else argv, old_spellings)
    given, rest = flag_value(args, "--config_path")
    path = DEFAULT_RIG_FILE if given is None else given
    rest = prepared_args(
        config_cls,
        rest,
        doc=doc,
        config_file=RIG_FILE_HELP,
        file_flag="--config_path",
        exit_status=EXIT_STATUS,
        collapsed={"rig": RIG_FIELDS_HELP, "remote": REMOTE_HELP},
    )
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
        config = parse_args(config_cls, rest, config_path=Path(wrapped.name), source=path)
    return at_command_fps(config)


def at_command_fps[T](config: T) -> T:
    """`config` with its rig at the command's own `--fps` (so101-replay's), if given: the one place it applies.

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

    def stopped(stop: KeyboardInterrupt) -> str:
        if isinstance(stop, SignalStop):
            return f"stopped by {stops.reason if stops is not None and stops.reason else stop}"
        return "interrupted"

    return run_body(main, stopped=stopped, explain=lambda e: with_config_path(str(e), config_path))
