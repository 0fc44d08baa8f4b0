"""What so101-judge, so101-review and so101-report share when they read their options.

draccus opens `--config_path` itself and a missing file ends in a traceback; it also wraps our own
validation errors (a ConfigError raised in a config's `__post_init__`) in its DecodingError. Here a
missing or unreadable file is one line naming it, and the message shown is ours when there is one.
"""

from __future__ import annotations

import stat
from pathlib import Path

from evaluation.errors import ConfigError, EvaluationError


def config_path(argv: list[str]) -> Path | None:
    """The `--config_path` given on the command line (either spelling), or None."""
    for i, arg in enumerate(argv):
        if arg.startswith("--config_path="):
            return Path(arg.split("=", 1)[1])
        if arg == "--config_path" and i + 1 < len(argv):
            return Path(argv[i + 1])
    return None


def check_config_path(argv: list[str], example: str) -> None:
    """Refuse a `--config_path` that names no readable file, before draccus opens it.

    `example`: a command line that works without the file, shown as the next step.

    Raises:
        ConfigError: naming the path and what to do.
    """
    path = config_path(argv)
    if path is None:
        return
    if (what := why_unreadable(path)) is not None:
        raise ConfigError(f"--config_path={path} {what}. Next: give the YAML file's path, or drop it: {example}")


def why_unreadable(path: Path) -> str | None:
    """What keeps `path` from being read as a YAML file, or None: stat first (opening a FIFO would block).

    robot/cli.py has the same check for the robot-side commands; evaluation does not import robot.
    """
    try:
        mode = path.stat().st_mode
        if stat.S_ISDIR(mode):
            return "is a folder, not a YAML file"
        if not stat.S_ISREG(mode):
            return "is not a regular file"
        with path.open("rb"):
            return None
    except FileNotFoundError:
        return "does not exist"
    except OSError as error:  # permission denied, a file where a folder should be, a symlink loop
        return f"cannot be read ({error.strerror or error})"


def root_cause(error: BaseException) -> BaseException:
    """The first of our own errors in the cause chain (draccus wraps validation errors), else the error."""
    current: BaseException | None = error
    while current is not None:
        if isinstance(current, EvaluationError):
            return current
        current = current.__cause__
    return error
