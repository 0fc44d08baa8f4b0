"""The one way a command prints a line for the user on stderr: errors, notices, where it stopped."""

import sys
from contextlib import suppress


def say(line: str) -> None:
    """`line` on stderr, unwrapped (a path or a command in it stays pasteable); a closed stream is no error."""
    with suppress(OSError, ValueError):
        print(line, file=sys.stderr, flush=True)


def say_error(message: str) -> None:
    """The command's error: `error: <message>`, one line."""
    say(f"error: {message}")
