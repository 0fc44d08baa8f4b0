"""The studio's jobs: each a so101-* command in its own process, on a pseudo-terminal of its own.

A job is the command a user would type, started from the venv's bin folder with the arguments the
page shows: the same code, nothing reimplemented. It runs on a pseudo-terminal so that its keyboard
controls are live (teleop/keys.py reads a terminal): a button on the page writes the very key a
person would press (`e` for the e-stop), and the command cannot tell the difference.

Its own process means the page is only a window on it: a closed tab, a crashed browser or a dropped
connection cannot take the command down with it; the studio decides what happens then (app.py: the
controller's lease). Stopping a job sends SIGINT, the command's own Ctrl-C path: its safe exit.

    job = Job.start(1, CommandLine(("so101-doctor", "--json=true")), lane=Lane.RIG)
    job.press("e"); job.interrupt(); job.wait(60)
"""

from __future__ import annotations

import contextlib
import os
import pty
import re
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from evaluation.errors import EvaluationError
from evaluation.studio.command_line import CommandLine

BIN = Path(sys.executable).parent
_ANSI = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][A-Za-z0-9]|\x1b[=>]")
MAX_LINES = 2000  # the page shows the end of a long output; the command's own log keeps the rest
COLUMNS = 200  # the terminal's width: rich wraps its tables, cards and status lines to it


class Lane(StrEnum):
    """What a job needs to itself: the rig (one owner at a time), or nothing but the machine."""

    RIG = "rig"
    OFFLINE = "offline"


class JobRefusedError(EvaluationError):
    """A job cannot start now (another holds the rig) or a key cannot be sent (it has ended)."""


@dataclass(frozen=True)
class JobView:
    """What the page shows of a job."""

    number: int
    command: str  # the command line, copyable
    lane: str
    running: bool
    exit_code: int | None
    started_s: float  # seconds since the studio started (monotonic)
    lines: tuple[str, ...]


class Job:
    """One command on a pseudo-terminal, its output kept as plain lines."""

    def __init__(self, number: int, line: CommandLine, lane: Lane, process: subprocess.Popen, master: int) -> None:
        self.number = number
        self.line = line
        self.lane = lane
        self.started_s = time.monotonic()
        self._process = process
        self._master = master
        self._lines: deque[str] = deque(maxlen=MAX_LINES)
        self._partial = b""
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, name=f"studio-job-{number}", daemon=True)
        self._reader.start()

    @classmethod
    def start(cls, number: int, line: CommandLine, lane: Lane, env: dict[str, str] | None = None) -> Job:
        """Start the command on a new pseudo-terminal.

        Raises:
            JobRefusedError: the command is not installed in this environment.
        """
        executable = BIN / line.argv[0]
        if not executable.exists():
            raise JobRefusedError(f"{executable} is missing. Next: pip install -e . in this environment")
        master, slave = pty.openpty()
        environment = os.environ | {"COLUMNS": str(COLUMNS), "LINES": "50", "TERM": "xterm", "NO_COLOR": "1"}
        try:
            process = subprocess.Popen(
                [str(executable), *line.argv[1:]],
                stdin=slave,
                stdout=slave,
                stderr=slave,
                env=environment | (env or {}),
                start_new_session=True,  # the studio's own Ctrl-C reaches it once, from the studio (app.py)
            )
        except OSError:
            os.close(master)
            raise
        finally:
            os.close(slave)
        return cls(number, line, lane, process, master)

    @property
    def running(self) -> bool:
        """Whether the command has not exited yet."""
        return self._process.poll() is None

    @property
    def exit_code(self) -> int | None:
        """The command's exit status, once it has exited."""
        return self._process.poll()

    def press(self, keys: str) -> None:
        """Type keys on the job's terminal, as a person at its keyboard would.

        Raises:
            JobRefusedError: the job has ended.
        """
        if not self.running:
            raise JobRefusedError(f"job {self.number} ({self.line.argv[0]}) has ended: nothing reads its keys")
        os.write(self._master, keys.encode())

    def interrupt(self) -> None:
        """SIGINT, the command's Ctrl-C: it stops safely (each command says how in its --help)."""
        if self.running:
            with contextlib.suppress(ProcessLookupError):
                self._process.send_signal(signal.SIGINT)

    def kill(self) -> None:
        """SIGKILL: only for a command that did not stop on its own (the studio's exit, after a wait)."""
        with contextlib.suppress(ProcessLookupError):
            self._process.kill()

    def wait(self, timeout_s: float) -> int | None:
        """Wait for the command to exit and its output to be read; its status, or None if still running."""
        try:
            code = self._process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None
        self._reader.join(timeout=5)
        return code

    def text(self) -> str:
        """The output so far, as plain text."""
        with self._lock:
            return "\n".join([*self._lines, self._partial_text()])

    def view(self, since_s: float, last: int = 200) -> JobView:
        """The page's picture of this job: its command line, state and last lines."""
        with self._lock:
            lines = (*list(self._lines)[-last:], self._partial_text())
        return JobView(
            number=self.number,
            command=self.line.shown,
            lane=str(self.lane),
            running=self.running,
            exit_code=self.exit_code,
            started_s=round(self.started_s - since_s, 3),
            lines=tuple(line for line in lines if line),
        )

    def _partial_text(self) -> str:
        return _plain(self._partial.rsplit(b"\r", 1)[-1])

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self._master, 65536)
            except OSError:  # EIO: every writer of the terminal has exited
                chunk = b""
            with self._lock:
                if not chunk:
                    if self._partial:
                        self._lines.append(self._partial_text())
                        self._partial = b""
                    break
                data = self._partial + chunk
                *complete, self._partial = data.split(b"\n")
                for raw in complete:
                    # A carriage return redraws the line (a progress bar): keep what it ended as.
                    self._lines.append(_plain(raw.rstrip(b"\r").rsplit(b"\r", 1)[-1]))
        with contextlib.suppress(OSError):
            os.close(self._master)


def _plain(raw: bytes) -> str:
    return _ANSI.sub(b"", raw).decode("utf-8", errors="replace").rstrip()


class JobBoard:
    """Every job the studio started, and the rule that only one of them drives the rig at a time."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self._jobs: list[Job] = []
        self._lock = threading.Lock()
        self._env = env or {}
        self.since_s = time.monotonic()

    def start(self, line: CommandLine, lane: Lane) -> Job:
        """Start a job; a rig job only when no other rig job runs.

        Raises:
            JobRefusedError: another job holds the rig (its number and command are named).
        """
        with self._lock:
            if lane is Lane.RIG and (holder := self.rig_job()) is not None:
                raise JobRefusedError(
                    f"job {holder.number} ({holder.line.argv[0]}) has the rig: stop it first (its Stop button, or q)"
                )
            job = Job.start(len(self._jobs) + 1, line, lane, self._env)
            self._jobs.append(job)
            return job

    def rig_job(self) -> Job | None:
        """The running job that holds the rig, if any."""
        return next((j for j in reversed(self._jobs) if j.lane is Lane.RIG and j.running), None)

    def get(self, number: int) -> Job | None:
        """The job with this number."""
        return self._jobs[number - 1] if 0 < number <= len(self._jobs) else None

    def all(self) -> list[Job]:
        """Every job, oldest first."""
        return list(self._jobs)

    def stop_all(self, timeout_s: float) -> list[tuple[Job, int | None]]:
        """The studio's exit: SIGINT to every running job (its safe stop), a wait, SIGKILL for any left.

        Returns each job that was running and its exit status (None: it had to be killed).
        """
        running = [j for j in self._jobs if j.running]
        for job in running:
            job.interrupt()
        deadline = time.monotonic() + timeout_s
        ended: list[tuple[Job, int | None]] = []
        for job in running:
            code = job.wait(max(0.1, deadline - time.monotonic()))
            if code is None:
                job.kill()
                job.wait(5)
            ended.append((job, code))
        return ended
