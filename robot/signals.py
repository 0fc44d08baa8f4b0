"""SIGINT, SIGTERM and SIGHUP end a command the way Ctrl-C does: the control loop stops, the rig exits safely.

    stops = StopSignals()
    with stops:                                   # handlers for the three signals, restored after
        ...                                       # here a signal raises SignalStop (a KeyboardInterrupt)
        with stops.rig(BimanualRig(...)) as rig:  # a second signal e-stops it; its exit is never cut short
            with stops.stopping(loop.stop):       # here a signal stops the loop at its next tick
                loop.run()
            with stops.finishing():               # here a save completes; only a second signal cuts it
                session.wait_for_save()

    first signal ──> stopping: stop()          finishing: (noted)          elsewhere: raise SignalStop
    second SIGINT/SIGTERM within `escalate_within_s` ──> e-stop every rig entered, stop(), and (outside
        `stopping`) raise SignalStop: nothing waits any more; `robot.cli.run_command` then exits at once
        and a save in progress is left to the writer process, which finishes it on its own.

A SIGHUP never escalates: one dropped SSH link can deliver it twice (the shell forwards it to its
jobs, the kernel to the terminal's group), systemd sends it right after SIGTERM, and nobody is there
to mean it.
It also points the standard streams that were a terminal at /dev/null: a hung-up terminal fails
every write, and the safe exit must not die on a status line.

The handler runs in the main thread between bytecodes, possibly while that thread holds a lock, so
it takes none (see stop_flag.py): it assigns attributes, calls the registered stops and e-stops
(lock-free flags), writes with os.write, and raises.
"""

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass
from types import FrameType
from typing import Any, Protocol

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
ESCALATE_WITHIN_S = 3.0  # a second SIGINT/SIGTERM this soon after the last stop signal e-stops and exits, s
_ESCALATING = frozenset({signal.SIGINT, signal.SIGTERM})
_NAMES = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}
_STANDARD_FDS = (0, 1, 2)


def signal_name(signum: int) -> str:
    """How a stop signal is named to the user: Ctrl-C, SIGTERM, SIGHUP."""
    return _NAMES.get(signum) or signal.Signals(signum).name


class SignalStop(KeyboardInterrupt):
    """A stop signal came where nothing could be asked to stop: unwind to the safe exit, as Ctrl-C does."""

    def __init__(self, signum: int, escalated: bool = False) -> None:
        super().__init__(signal_name(signum))
        self.signum = signum
        self.escalated = escalated


class EStoppable(Protocol):
    """What a second signal presses: a rig's software e-stop (it must be signal-safe)."""

    def estop(self) -> None:
        """Freeze at the next chance; never blocks."""
        ...


@dataclass
class _Section:
    stop: Callable[[], None] | None  # stopping: what a signal calls; None: finishing


def _write_stderr(text: str) -> None:
    """The default announcement: one line straight to fd 2 (no Python-level lock)."""
    with suppress(OSError):  # a hung-up terminal: nobody is reading
        os.write(2, ("\n" + text + "\n").encode())


class StopSignals:
    """Stop signals for one command: install with `with`, then mark the sections (module docstring)."""

    def __init__(
        self,
        *,
        escalate_within_s: float = ESCALATE_WITHIN_S,
        announce: Callable[[str], None] = _write_stderr,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`announce` gets one line per signal and runs inside the handler: it must take no lock."""
        self.escalate_within_s = escalate_within_s
        self.signum: int | None = None  # the first stop signal that came
        self.escalated = False  # a second signal came in time: e-stopped, exiting without waiting
        self._announce = announce
        self._clock = clock
        self._last_at: float | None = None
        self._sections: list[_Section] = []
        self._estops: list[EStoppable] = []
        self._previous: dict[int, Any] = {}
        self._terminal_fds: tuple[int, ...] = ()

    # --- what came ----------------------------------------------------------------------------

    @property
    def reason(self) -> str | None:
        """How the command was stopped, for its summary ("SIGTERM", "Ctrl-C twice: e-stop"); None: no signal."""
        if self.signum is None:
            return None
        return signal_name(self.signum) + (" twice: e-stop" if self.escalated else "")

    @property
    def exit_code(self) -> int | None:
        """128 + the first signal's number (130 Ctrl-C, 129 SIGHUP, 143 SIGTERM); None: no signal."""
        return None if self.signum is None else 128 + self.signum

    # --- installing ---------------------------------------------------------------------------

    def __enter__(self) -> "StopSignals":
        if threading.current_thread() is not threading.main_thread():
            return self  # only the main thread may handle signals (a command run from a test's thread)
        self._terminal_fds = tuple(fd for fd in _STANDARD_FDS if _isatty(fd))
        for signum in STOP_SIGNALS:
            previous = signal.getsignal(signum)
            if previous is signal.SIG_IGN:
                continue  # nohup, or a background job: the signal was meant not to reach us
            self._previous[signum] = previous
            signal.signal(signum, self.handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()

    # --- sections -----------------------------------------------------------------------------

    @contextmanager
    def stopping(self, stop: Callable[[], None]) -> Iterator[None]:
        """Inside, a signal calls `stop` (signal-safe, e.g. `ControlLoop.stop`) instead of raising.

        A signal that came before the block calls it on entry, so a loop started late stops at once.
        """
        section = _Section(stop)
        self._sections.append(section)
        try:
            if self.signum is not None:
                stop()
            yield
        finally:
            self._sections.remove(section)

    @contextmanager
    def finishing(self) -> Iterator[None]:
        """Inside, a first signal lets the work finish (a save); a second one raises SignalStop.

        Raises:
            SignalStop: on entry, when the command is already escalating (nothing may wait any more).
        """
        if self.escalated and self.signum is not None:
            raise SignalStop(self.signum, escalated=True)
        section = _Section(None)
        self._sections.append(section)
        try:
            yield
        finally:
            self._sections.remove(section)

    @contextmanager
    def rig[R: EStoppable](self, rig: AbstractContextManager[R]) -> Iterator[R]:
        """Enter `rig`; while it is entered a second signal e-stops it, and its exit runs to the end."""
        entered = rig.__enter__()
        self._estops.append(entered)
        try:
            yield entered
        except BaseException as error:
            with self.stopping(lambda: None):
                if not rig.__exit__(type(error), error, error.__traceback__):
                    raise
        else:
            with self.stopping(lambda: None):
                rig.__exit__(None, None, None)
        finally:
            self._estops.remove(entered)

    # --- the handler --------------------------------------------------------------------------

    def handle(self, signum: int, frame: FrameType | None = None) -> None:
        """The signal handler (public for tests): see the module docstring for what each signal does."""
        now = self._clock()
        first = self.signum is None
        escalate = (
            not first
            and signum in _ESCALATING
            and self._last_at is not None
            and now - self._last_at <= self.escalate_within_s
        )
        self._last_at = now
        if first:
            self.signum = signum
        if signum == signal.SIGHUP:
            self._leave_terminal()
        if escalate:
            self.escalated = True
            for target in self._estops:
                target.estop()
        for section in self._sections:
            if section.stop is not None:
                section.stop()
        self._announce(self._message(signum, first, escalate))
        innermost = self._sections[-1] if self._sections else None
        if innermost is None or (innermost.stop is None and escalate):
            raise SignalStop(self.signum or signum, escalated=self.escalated)

    def _message(self, signum: int, first: bool, escalate: bool) -> str:
        name = signal_name(signum)
        if escalate:
            return f"{name} again: e-stop, the followers freeze where they are (torque on); exiting now"
        again = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM"}.get(signum, "Ctrl-C or SIGTERM")
        if first:
            return f"{name}: stopping safely; {again} again within {self.escalate_within_s:g} s: freeze and exit now"
        return f"{name}: already stopping safely"

    def _leave_terminal(self) -> None:
        """Point the standard streams that were a terminal at /dev/null (the terminal hung up)."""
        if not self._terminal_fds:
            return
        try:
            null = os.open(os.devnull, os.O_RDWR)
        except OSError:
            return
        for fd in self._terminal_fds:
            with suppress(OSError):
                os.dup2(null, fd)
        os.close(null)
        self._terminal_fds = ()


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False
