"""The errors a command's user reads: one line that says what failed, where, and the next step.

    CommandError        every error meant for the person at the terminal (robot's RobotError and
    │                   evaluation's EvaluationError derive from it): exit 1, printed as one line
    └── UsageError      the command line or a file it names is not valid; nothing ran: exit 2

draccus wraps an error raised while a config is built (a `__post_init__` check) in its own; the
shell finds the `CommandError` in the chain and shows its message (robot/shell/parse_errors.py).
"""


class CommandError(Exception):
    """An error whose message is for the user: what failed, where, and the next step as a command."""


class UsageError(CommandError, ValueError):
    """The command line or a file it names is not valid: nothing ran (exit status 2)."""
