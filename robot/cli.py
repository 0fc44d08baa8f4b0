"""Command-line plumbing shared by every `so101-*` command.

LeRobot's convention, with the rig file as the config: `--config_path=hardware_configs/<rig>.yaml`
loads the rig, dotted flags override it (`--rig.bus.read_deadline_ms=30`) and set the command's
own options (`--arms=left_follower`). `--help` lists every field with its comment.

Errors reach the user as one line that says what to do, never as a traceback.
"""

import logging
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import draccus
import yaml

from robot.config import DEFAULT_RIG_FILE
from robot.errors import ConfigError, RobotError

logger = logging.getLogger(__name__)


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


def _explain(error: BaseException) -> str:
    """Our own validation message if one is in the chain, else draccus's (it names the field)."""
    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, RobotError):
            return str(cause)
        cause = cause.__cause__ or cause.__context__
    first_line = str(error).strip().splitlines()[0]
    underlying = str(error).split("Underlying error is", 1)
    return first_line + (f" ({underlying[1].strip().strip('"')})" if len(underlying) == 2 else "")


def parse_command[T](config_cls: type[T], argv: list[str] | None = None) -> T:
    """Parse a command config whose `rig` field comes from `--config_path` (default: virtual rig).

    Raises:
        ConfigError: the rig file is missing, not YAML, or holds a value that is not allowed.
    """
    args = sys.argv[1:] if argv is None else argv
    path, rest = _split_config_path(args)
    if any(a in ("-h", "--help") for a in rest):
        draccus.parse(config_cls, args=rest)  # prints help and exits
    try:
        rig = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError:
        raise ConfigError(f"no rig file at {path}; see hardware_configs/README.md") from None
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"cannot read rig file {path}: {e}") from e
    if not isinstance(rig, dict):
        raise ConfigError(f"{path}: expected a mapping of rig settings (see hardware_configs/README.md)")
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as wrapped:
        yaml.safe_dump({"rig": rig}, wrapped)
        wrapped.flush()
        try:
            return draccus.parse(config_cls, config_path=wrapped.name, args=rest)
        except (draccus.utils.ParsingError, draccus.utils.DecodingError, ValueError, TypeError) as e:
            raise ConfigError(f"{path}: {_explain(e)}") from e


def run_command(main: Callable[[], int | None]) -> int:
    """Run a command's body: typed errors become one clear line on stderr and exit status 1."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        return main() or 0
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except RobotError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
