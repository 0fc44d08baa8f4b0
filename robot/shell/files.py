"""Why a file named on the command line cannot be read, asked before anything opens it."""

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


def config_path_arg(argv: list[str]) -> Path | None:
    """The `--config_path` given on the command line (either spelling), or None."""
    for i, arg in enumerate(argv):
        if arg.startswith("--config_path="):
            return Path(arg.split("=", 1)[1])
        if arg == "--config_path" and i + 1 < len(argv):
            return Path(argv[i + 1])
    return None
