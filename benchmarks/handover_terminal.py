"""A command on a pseudo-terminal of its own: keys typed into it, its output watched for lines.

    with TerminalCommand([...], env) as command:
        command.wait_for("recording started", timeout_s=120)
        t = command.press(" ")           # monotonic time the key was written
        command.wait_for("autonomous -> paused", timeout_s=30)

Why a terminal: LeRobot's keyboard controls (`create_key_listener`) use pynput only on a display;
headless, they fall back to reading keys from stdin, and only when stdin is a TTY. Its output is
read on a thread (a full pty buffer would block the command) and kept whole for failure reports.
"""

import contextlib
import os
import pty
import re
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence

TAIL_CHARS = 4000  # how much of the output a failure message quotes


class TerminalCommandError(RuntimeError):
    """The command exited, or did not print what was awaited in time."""


class TerminalCommand:
    """A child process whose stdin, stdout and stderr are one pseudo-terminal; a context manager."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str]) -> None:
        self.argv = list(argv)
        master, slave = pty.openpty()
        self._master = master
        self.process = subprocess.Popen(
            self.argv, stdin=slave, stdout=slave, stderr=slave, env=dict(env), start_new_session=True, close_fds=True
        )
        os.close(slave)
        self._output: list[str] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, name="terminal-reader", daemon=True)
        self._reader.start()
        self._searched = 0  # wait_for looks only past the previous match

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self._master, 65536)
            except OSError:  # EIO: every process holding the terminal closed it
                return
            if not data:
                return
            with self._lock:
                self._output.append(data.decode(errors="replace"))

    @property
    def output(self) -> str:
        """Everything printed so far."""
        with self._lock:
            return "".join(self._output)

    def tail(self) -> str:
        """The end of the output, for error messages."""
        return self.output[-TAIL_CHARS:]

    def press(self, key: str) -> float:
        """Type `key` (e.g. " " or "\\t"); returns the monotonic time it was written."""
        t = time.monotonic()
        os.write(self._master, key.encode())
        return t

    def wait_for(self, pattern: str, timeout_s: float) -> re.Match[str]:
        """Block until the output past the previous match matches `pattern` (a regex); raises on exit or timeout."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout_s
        while True:
            text = self.output
            match = regex.search(text, self._searched)
            if match:
                self._searched = match.end()
                return match
            if self.process.poll() is not None:
                self._reader.join(timeout=1.0)
                if match := regex.search(self.output, self._searched):
                    self._searched = match.end()
                    return match
                raise TerminalCommandError(
                    f"{self.argv[0]} exited ({self.process.returncode}) before printing /{pattern}/; "
                    f"its output ended with:\n{self.tail()}"
                )
            if time.monotonic() > deadline:
                raise TerminalCommandError(
                    f"{self.argv[0]} did not print /{pattern}/ within {timeout_s:.0f} s; its output ended with:\n"
                    f"{self.tail()}"
                )
            time.sleep(0.01)

    def wait(self, timeout_s: float) -> int:
        """Wait for the command to end; returns its exit status, raises after `timeout_s`."""
        try:
            code = self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired as e:
            raise TerminalCommandError(
                f"{self.argv[0]} still runs after {timeout_s:.0f} s; its output ended with:\n{self.tail()}"
            ) from e
        self._reader.join(timeout=1.0)
        return code

    def stop(self) -> None:
        """Ctrl-C the command's process group, then kill it if it lingers; close the terminal."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self._reader.join(timeout=1.0)
        with contextlib.suppress(OSError):
            os.close(self._master)

    def __enter__(self) -> "TerminalCommand":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
