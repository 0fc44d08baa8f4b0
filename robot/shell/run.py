"""A command's body run into its exit status: the one place an error becomes its line and its code.

    code, failed = run_body(lambda: _run(config))

A `UsageError` is printed and exits 2, any other `CommandError` exits 1 (robot/shell/exit_codes.py);
Ctrl-C (and robot/signals.py's `SignalStop`, a KeyboardInterrupt carrying its signal) exits 128+n
after the line `stopped` gives. Anything else is a bug and keeps its traceback.
"""

import signal
from collections.abc import Callable

from robot.shell.errors import CommandError, UsageError
from robot.shell.exit_codes import Exit, stopped_by
from robot.shell.say import say, say_error


def run_body(
    body: Callable[[], int | None],
    *,
    stopped: Callable[[KeyboardInterrupt], str] = lambda _: "interrupted",
    explain: Callable[[CommandError], str] = str,
) -> tuple[int, bool]:
    """The body's exit status, and whether it failed with an error (its line is then on stderr).

    `stopped`: the line said when a signal or Ctrl-C ends the body (what is kept, how to resume);
    `explain`: a failure's line from its error (robot/cli.py adds the person's rig file to next steps).
    """
    try:
        return int(body() or Exit.DONE), False
    except KeyboardInterrupt as stop:
        say(f"\n{stopped(stop)}")
        return stopped_by(getattr(stop, "signum", signal.SIGINT)), False
    except UsageError as e:  # about the options themselves, a file flag included: left as written
        say_error(str(e))
        return Exit.USAGE, True
    except CommandError as e:
        say_error(explain(e))
        return Exit.FAILED, True
