"""Files named on the command line: which one, and why it cannot be read, asked before anything opens it."""

import stat
from pathlib import Path


def why_unreadable(path: Path) -> str | None:
    """What keeps `path` from being read as a YAML file, or None: stat first (opening a FIFO would block)."""
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


def flag_value(argv: list[str], flag: str) -> tuple[Path | None, list[str]]:
    """The file `flag` names (`--flag=F` or `--flag F`; the last one wins, as when parsed), and `argv` without it."""
    path: Path | None = None
    rest: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg.startswith(f"{flag}="):
            path = Path(arg.split("=", 1)[1])
        elif arg == flag:
            path = Path(next(args, ""))
        else:
            rest.append(arg)
    return path, rest


def config_path_arg(argv: list[str]) -> Path | None:
    """The rig file `--config_path` names on the command line, or None."""
    return flag_value(argv, "--config_path")[0]
