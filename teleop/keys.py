"""Keyboard controls that work in a plain terminal, over SSH too: no X, no Wayland, no root.

The terminal is put in cbreak mode (keys arrive one by one, unechoed, Ctrl-C still interrupts) and
a thread turns bytes into `Key`s the control loop polls once per tick:

    →  or n      next: end the episode now and save it (in a reset: start the next episode)
    ←  or r      re-record: discard this episode and record it again
    space or p   pause / resume
    q  or Esc    stop: save the episode in progress and finish
    e            e-stop: freeze the followers where they are, torque kept on (so101-release lets go)
    c  or Tab    take over a rollout with the leaders / hand it back (so101-deploy --correction.enabled=true)
    0, h, 1, s   score a rollout's criterion 0, half or 1, or skip scoring it (--live_scores.enabled=true)
    k            keep: the last seconds and what follows, until k again (so101-deploy --mode=highlight)
"""

import contextlib
import logging
import os
import queue
import select
import sys
import termios
import threading
import tty
from collections.abc import Callable
from enum import StrEnum
from typing import TextIO

logger = logging.getLogger(__name__)
_ESCAPE_WAIT_S = 0.05  # an Esc not followed by '[' within this long is the Esc key itself


class Key(StrEnum):
    """What a key press means to a session."""

    NEXT = "next"
    RERECORD = "rerecord"
    PAUSE = "pause"
    STOP = "stop"
    ESTOP = "estop"
    TAKE_OVER = "take_over"
    SCORE_0 = "score_0"
    SCORE_HALF = "score_half"
    SCORE_1 = "score_1"
    SKIP = "skip"
    KEEP = "keep"


_SEQUENCES = {b"\x1b[C": Key.NEXT, b"\x1b[D": Key.RERECORD, b"\x1bOC": Key.NEXT, b"\x1bOD": Key.RERECORD}
_SINGLE = {
    b"n": Key.NEXT,
    b"r": Key.RERECORD,
    b" ": Key.PAUSE,
    b"p": Key.PAUSE,
    b"q": Key.STOP,
    b"e": Key.ESTOP,
    b"c": Key.TAKE_OVER,
    b"\t": Key.TAKE_OVER,
    b"0": Key.SCORE_0,
    b"h": Key.SCORE_HALF,
    b"1": Key.SCORE_1,
    b"s": Key.SKIP,
    b"k": Key.KEEP,
}
HINTS = "→/n next  ←/r re-record  space pause  q stop  e e-stop"


def parse(data: bytes) -> list[Key]:
    """Keys in a chunk of terminal input (unknown bytes are ignored)."""
    keys: list[Key] = []
    i = 0
    while i < len(data):
        three = data[i : i + 3]
        if three in _SEQUENCES:
            keys.append(_SEQUENCES[three])
            i += 3
            continue
        if data[i : i + 1] == b"\x1b":
            if data[i + 1 : i + 2] in (b"[", b"O"):
                i += 3  # another escape sequence (up, down, function keys): skip it
                continue
            keys.append(Key.STOP)
            i += 1
            continue
        key = _SINGLE.get(data[i : i + 1].lower())
        if key is not None:
            keys.append(key)
        i += 1
    return keys


class KeyReader:
    """Reads keys from a terminal in the background; a context manager that restores the terminal."""

    def __init__(self, stream: TextIO | None = None, extra: Callable[[], list[Key]] = list) -> None:
        """`extra`: more keys polled with the terminal's (a foot pedal's: teleop/pedal.py)."""
        self._stream = stream if stream is not None else sys.stdin
        self._queue: queue.Queue[Key] = queue.Queue()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._saved: list | None = None
        self.enabled = False
        self._extra = extra

    def __enter__(self) -> "KeyReader":
        try:
            fd = self._stream.fileno()
        except (AttributeError, OSError, ValueError):
            return self
        if not os.isatty(fd):
            logger.info("standard input is not a terminal: keyboard controls are off")
            return self
        self._saved = termios.tcgetattr(fd)
        tty.setcbreak(fd)
        self.enabled = True
        self._thread = threading.Thread(target=self._run, args=(fd,), name="keys", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        if self._saved is not None:
            with contextlib.suppress(termios.error, OSError, ValueError):  # hung up (SIGHUP): nothing to restore
                termios.tcsetattr(self._stream.fileno(), termios.TCSADRAIN, self._saved)
            self._saved = None

    def poll(self) -> list[Key]:
        """Keys pressed since the last poll (never blocks), the `extra` source's after the terminal's."""
        keys = []
        while True:
            try:
                keys.append(self._queue.get_nowait())
            except queue.Empty:
                return keys + self._extra()

    def _run(self, fd: int) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([fd], [], [], 0.1)
            if not ready:
                continue
            try:
                data = os.read(fd, 32)
            except OSError:
                return
            if not data:
                return
            if data == b"\x1b":
                # Maybe the start of an arrow key's sequence: wait a moment for the rest.
                more, _, _ = select.select([fd], [], [], _ESCAPE_WAIT_S)
                if more:
                    data += os.read(fd, 32)
            for key in parse(data):
                self._queue.put(key)
