r"""The commands a so101-* command prints as what to do next, found in its output and parsed for real.

    commands_in(text, printed_by="so101-replay")   # the NextCommand lines of a command's output
    record(text, source, printed_by)                # appended to the session's log ($SO101_NEXT_STEPS_LOG)
    why_not(command)                                # None if its command's own parser accepts it, else why not
    check_session(session)                          # at the session's end: what does not parse fails the run

Which command lines:
- each standalone `so101-<verb>` (or `lerobot-train`) followed by options, anywhere in the output
  ("judge them with: so101-judge --dataset.root=...", "(so101-judge --dataset.root=d)");
- a bare `so101-<verb>` after `Next:`, `Next step:` or a colon, or alone on an indented line under a
  line ending in ":", where the sentence ends after it ("Next: run so101-calibrate."); one followed
  by more prose is a mention ("so101-record repairs it");
- with `printed_by`, each `--option` a `Next:` names outside a command line ("Next: add
  --pace=realtime, or use --engine.kind=sync") is an option of the command that printed it, checked
  on its own (by name only when it has no value; another tool's `--repo-type` is skipped).
A command's options are the `-...` words after it, up to the first other word; a sentence's `.,;:)`
after the last is not part of it. A line ending in `\` continues: the rest is the user's.

What counts as parsing: tests/support/next_step_parsing.py.
"""

import dataclasses
import json
import os
import re
import shlex
from pathlib import Path

import pytest

from tests.support.next_step_parsing import ELISION, PLACEHOLDER, why_not

LOG_ENV = "SO101_NEXT_STEPS_LOG"  # the session's JSON-lines file of printed next-step commands
# "Next: run so101-x ...", "Next step: ...", or a command right after a colon ("judge them with: so101-judge ...").
MARKER = re.compile(r"Next(?: step)?:|:\s+(?=(?:so101-|lerobot-train\b))")
NEXT = re.compile(r"Next(?: step)?:")
COMMAND = re.compile(r"(?<![^\s(`'\"])(?:so101-[a-z][a-z0-9-]*[a-z0-9]|lerobot-train)(?=$|[\s.,;:)`'\"])")  # no path
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # a terminal's colours and cursor moves (a pseudo-terminal's output)
ENDS = ".,;:)`'\""  # a sentence's punctuation after a command's last token
# Another tool's command line in a next step, to the end of its clause: its options are not ours.
FOREIGN = re.compile(
    r"(?<![\w./-])(?:python3?|hf|huggingface-cli|pip|rm|ssh|sudo|docker|git|lerobot-[\w-]+)\s[^;)]*?(?=;|\)|,?\s+or\s|$)"
)
WRAPPERS = frozenset({"so101-demo"})  # they print the errors of the commands they run: no options of their own


@dataclasses.dataclass(frozen=True)
class NextCommand:
    """A command line found in a command's output, and where."""

    script: str  # so101-<verb>
    args: tuple[str, ...]  # its options as printed, placeholders kept
    elided: bool = False  # it ends in `...` (or a line-continuing backslash): the user adds options
    line: str = ""  # the output line it came from
    source: str = ""  # the test (and command) whose output held it
    added: bool = False  # an option a `Next:` says to add to the command that printed it ("Next: add --pace=realtime")

    @property
    def text(self) -> str:
        """The command as one would paste it."""
        words = [self.script, *(shlex.quote(a) for a in self.args), *([ELISION] if self.elided else [])]
        return " ".join(words) + ("   (added to the command that printed it)" if self.added else "")


def commands_in(text: str, source: str = "", printed_by: str | None = None) -> list[NextCommand]:
    """Every so101-* (and lerobot-train) command line in `text` (see the module docstring for which).

    `printed_by`: the command whose output `text` is; the options a `Next:` names outside any command
    line ("Next: pass --fps=30") are then checked as that command's, each on its own.
    """
    found = []
    block_indent: int | None = None  # inside the indented lines under a line that ends in ":"
    for line in ANSI.sub("", text).splitlines():
        indent = len(line) - len(line.lstrip())
        if block_indent is not None and (not line.strip() or indent <= block_indent):
            block_indent = None
        marker = MARKER.search(line)
        starts = block_indent is not None and COMMAND.match(line.lstrip())  # a command line under "...:"
        steps_from = indent if starts else marker.end() if marker else len(line)
        if line.rstrip().endswith(":") and block_indent is None:
            block_indent = indent
        commands, rest = _commands(PLACEHOLDER.sub(_joined, line), steps_from, line.strip(), source)
        found += commands
        if printed_by and (next_step := NEXT.search(line)) is not None:  # each an alternative of its own
            flags = _flags(rest[next_step.end() :])
            found += [NextCommand(printed_by, (flag,), True, line.strip(), source, added=True) for flag in flags]
    return found


def _joined(placeholder: re.Match) -> str:
    """`<dataset folder>` as one word, `<dataset_folder>`."""
    return re.sub(r"\s+", "_", placeholder[0])


def _commands(line: str, steps_from: int, text: str, source: str) -> tuple[list[NextCommand], str]:
    """The command lines in `line` (bare names only from `steps_from` on), and `line` with them blanked out."""
    if line.rstrip().endswith("\\"):  # continued on the next line: the rest is the user's to add
        line = line.rstrip()[:-1] + ELISION
    found, rest, start = [], line, 0
    for name in COMMAND.finditer(line):
        if name.start() < start:
            continue  # inside the previous command's options
        after = line[name.end() :]
        args, elided, used = _options(after)
        bare_ok = name.start() >= steps_from and (not after.strip() or after.strip()[0] in ENDS)
        if not args and not elided and not bare_ok:
            continue  # a mention ("so101-record repairs it"), or a name outside the next steps
        elided = elided or any(ELISION in arg for arg in args)  # `--policy.path=...`: the user fills it in
        found.append(NextCommand(name[0], tuple(args), elided, text, source))
        start = name.end() + used
        rest = rest[: name.start()] + " " * (start - name.start()) + rest[start:]
    return found, rest


def _options(rest: str) -> tuple[list[str], bool, int]:
    """The option tokens at the start of `rest`, whether an elision (`...`) followed them, and the length used."""
    lexer = shlex.shlex(rest, posix=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    args: list[str] = []
    while True:
        used = lexer.instream.tell()
        try:
            token = lexer.get_token()
        except ValueError:  # an unbalanced quote in the prose after the command
            return args, False, used
        if token is None or token == lexer.eof:
            return args, False, used
        if token.strip(ENDS.replace(".", "")) in (ELISION, "\\"):  # the user's options, or the next line's
            return args, True, lexer.instream.tell()
        if not token.startswith("-") or token.strip("-") == "":
            return args, False, used
        core = _without_punctuation(token)
        args.append(core)
        if core == token:
            continue
        return args, False, lexer.instream.tell()  # the sentence goes on after it


def _without_punctuation(word: str) -> str:
    """`word` without the punctuation of the sentence around it (`--a=b).` -> `--a=b`; `--a=...),` -> `--a=...`)."""
    core = word.rstrip(ENDS)
    return core + ELISION if ELISION in word[len(core) :] else core


def _flags(text: str) -> list[str]:
    """The `--option[=value]` words of prose (`Next: pass --fps=30, or ...`), a sentence's punctuation removed.

    Those of another tool's command line ("(hf download x --local-dir=d)", "python -m m --root=r") are not.
    """
    text = FOREIGN.sub(" ", text)
    try:
        words = shlex.split(text)
    except ValueError:  # an apostrophe in the prose
        words = text.split()
    flags = []
    for word in words:
        word = _without_punctuation(word.lstrip("(`'\""))
        if re.match(r"--[a-z]", word):
            flags.append(word)
    return flags


def record(text: str, source: str, printed_by: str | None = None) -> None:
    """Append the next-step commands of `text` (`printed_by`'s output) to the session's log, if one is set."""
    log = os.environ.get(LOG_ENV)
    if not log or not MARKER.search(text):
        return
    commands = commands_in(text, source, None if printed_by in WRAPPERS else printed_by)
    if commands:
        with open(log, "a") as out:
            for c in commands:
                out.write(json.dumps(dataclasses.asdict(c)) + "\n")


def current_test() -> str:
    """The running test's node id (pytest's PYTEST_CURRENT_TEST without the phase), or ""."""
    return os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0]


def watch_capture_fixtures() -> None:
    """Log the next steps in what tests read through capsys and capfd too: in-process command runs.

    What a test does not read reaches the log through its report (tests/conftest.py); what it reads
    is gone from there, so `readouterr` is wrapped.
    """
    original = pytest.CaptureFixture.readouterr
    if getattr(original, "logs_next_steps", False):
        return

    def readouterr(self):
        captured = original(self)
        out, err = (t.decode(errors="replace") if isinstance(t, bytes) else t for t in captured)
        record(f"{out}\n{err}", current_test())
        return captured

    readouterr.logs_next_steps = True
    pytest.CaptureFixture.readouterr = readouterr


def logged() -> list[NextCommand]:
    """The session's logged commands, each command line once (the first test that printed it)."""
    log = os.environ.get(LOG_ENV)
    if not log or not Path(log).is_file():
        return []
    unique: dict[tuple, NextCommand] = {}
    for line in Path(log).read_text().splitlines():
        row = json.loads(line)
        command = NextCommand(**(row | {"args": tuple(row["args"])}))
        unique.setdefault((command.script, command.args, command.elided, command.added), command)
    return list(unique.values())


def logged_failures() -> list[str]:
    """`<command>  (printed by <source>: <line>): <why>` for each logged command its parser refuses."""
    return [failure for c in logged() if (failure := describe_failure(c)) is not None]


def check_session(session: pytest.Session) -> list[str]:
    """The session's logged commands that do not parse; any makes a passing session's exit status 1."""
    failures = logged_failures()
    if failures and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    return failures


def describe_failure(command: NextCommand) -> str | None:
    """One line on a command that does not parse, or None if it does."""
    why = why_not(command)
    if why is None:
        return None
    where = f" (printed by {command.source}: {command.line!r})" if command.source or command.line else ""
    return f"{command.text}{where}: {why}"
