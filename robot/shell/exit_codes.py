"""The one table of exit codes every so101-* command uses; docs/command-line.md prints it.

    return Exit.USAGE                  # a command's status, by meaning
    return stopped_by(signal.SIGINT)   # 130: the shell's convention for a signal, as if it had killed us

tests/test_exit_codes.py checks the table against the document and runs every command into the
codes it documents: a bad option, a file that is not there, a missing API key.
"""

from enum import IntEnum


class Exit(IntEnum):
    """What a command's exit status says (a signal's status is `stopped_by`)."""

    DONE = 0
    FAILED = 1  # the line on stderr says what, and what to do next
    USAGE = 2  # as argparse (draccus) exits for an unknown flag
    PARTIAL = 3  # some items failed, the rest are kept: the same command again does the rest
    PAUSED = 75  # EX_TEMPFAIL (sysexits.h): a temporary failure, resume later


SIGNAL_BASE = 128

# code -> (what it is called, what it tells the user)
MEANINGS: dict[int, tuple[str, str]] = {
    Exit.DONE: ("done", ""),
    Exit.FAILED: ("failed", "the line on stderr says what, and what to do next"),
    Exit.USAGE: ("usage", "the command line, or the rig or options file it names, is not valid (nothing ran)"),
    Exit.PARTIAL: ("partly done", "some items failed, the rest are kept (so101-judge: episodes)"),
    Exit.PAUSED: ("paused", "a service is overloaded; the printed command resumes later (so101-judge)"),
}
SIGNALS = "stopped by signal n after the safe exit: 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP"

# The footer of every command's --help: the table in one sentence.
EXIT_STATUS = (
    "Exit status: "
    + ", ".join(f"{int(code)} {name}" for code, (name, _) in MEANINGS.items())
    + f", {SIGNAL_BASE}+n signal n (docs/command-line.md)."
)


def stopped_by(signum: int) -> int:
    """The exit status of a command stopped by signal `signum`, after its safe exit."""
    return SIGNAL_BASE + signum


def table_lines() -> list[str]:
    """The table as docs/command-line.md shows it, one code per line."""
    rows = [f"    {int(code):<6} {name}{': ' + detail if detail else ''}" for code, (name, detail) in MEANINGS.items()]
    return [*rows, f"    {f'{SIGNAL_BASE}+n':<6} {SIGNALS}"]
