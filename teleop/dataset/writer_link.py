"""The writer process and the pipe to it: start it, talk to it, and notice when it dies or hangs.

Every wait polls the pipe in short steps and checks that the process is alive in between, so a
dead writer is reported as WriterProcessError within a poll step and a hung one after the reply
timeout, or the save timeout for a save (then it is killed): `longest_wait_s` bounds every wait.
At interpreter exit a forgotten writer gets a grace period to finish its current save, then is
killed, so exiting never hangs.
"""

import atexit
import itertools
import logging
import time
from multiprocessing.context import BaseContext
from multiprocessing.synchronize import Semaphore
from typing import NoReturn

from teleop.dataset.errors import WriterProcessError
from teleop.dataset.frame_ring import FrameRing
from teleop.dataset.spec import WriterSpec
from teleop.dataset.writer_child import run_writer

logger = logging.getLogger(__name__)

_POLL_S = 0.1  # how often a blocking wait checks that the writer process is still alive, seconds
_EXIT_GRACE_S = 30.0  # at interpreter exit, how long an abandoned writer may take to finish, seconds
_REAP_S = 5.0  # how long a dead or killed writer process is given to be reaped before its error is raised, s
_NEXT_STEP = "Next: run again with resume; saved episodes are safe and opening the dataset repairs it."


class WriterLink:
    """A started writer process and its pipe. Not thread-safe: the owner serialises calls."""

    def __init__(self, spec: WriterSpec, ring: FrameRing, free_slots: Semaphore, context: BaseContext) -> None:
        """Start the writer process; its first reply (request 0) is the open report.

        A forked writer gets `ring` itself (its memory is inherited); a spawned one its name to attach to.
        """
        self.spec = spec
        self._ids = itertools.count(1)
        self._conn, child_conn = context.Pipe()
        forked = context.get_start_method() == "fork"
        # A forked writer inherits this end too: it must close it, or our death would not end its input.
        parent_end = self._conn.fileno() if forked else None
        self._process = context.Process(
            target=run_writer,
            args=(spec, child_conn, ring if forked else ring.name, free_slots, parent_end),
            name="so101-dataset-writer",
        )
        self._process.start()
        child_conn.close()  # so the writer's death reads as end-of-file here
        atexit.register(self._at_exit)

    @property
    def pid(self) -> int:
        """The writer process's id."""
        return self._process.pid

    def send(self, message: tuple) -> None:
        """Send without waiting (frames, begin, discard). Raises WriterProcessError if it is gone."""
        try:
            self._conn.send(message)
        except (BrokenPipeError, EOFError, OSError):
            self._died()

    def request(self, kind: str, *args: object, timeout_s: float | None = None) -> object:
        """Send a request and wait for its reply; an error reply is raised (typed, from the writer).

        `timeout_s`: how long the writer may take before it is deemed hung (default the spec's reply timeout).
        """
        request = next(self._ids)
        self.send((kind, request, *args))
        return self.wait_reply(request, timeout_s)

    def wait_reply(self, request: int, timeout_s: float | None = None) -> object:
        """Wait for the reply to `request` (0: the open report), as long as the writer lives.

        A writer that has not answered after `timeout_s` (default the spec's reply timeout) is killed
        and WriterProcessError raised; the whole wait lasts at most `longest_wait_s(timeout_s)`.
        """
        timeout_s = self.spec.reply_timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout_s
        while True:
            if self._conn.poll(_POLL_S):
                message = self._receive()
                if message[0] == "reply" and message[1] == request:
                    if isinstance(message[2], BaseException):
                        raise message[2]
                    return message[2]
                if message[0] == "error":
                    logger.warning("dataset writer: %s", message[1])  # the reply to come carries it too
            elif not self._process.is_alive():
                self._died()
            elif time.monotonic() > deadline:
                self._process.kill()  # a writer that stopped answering cannot be trusted to finish
                self._died(f"did not answer within {timeout_s:g} s and was killed")

    def raise_async_error(self) -> None:
        """Raise an error the writer reported on its own (it dropped the episode); never blocks."""
        while self._conn.poll():
            message = self._receive()
            if message[0] == "error":
                raise message[1]

    def shut_down(self) -> None:
        """Close the pipe and wait for the process to exit (killing it if it does not)."""
        atexit.unregister(self._at_exit)
        self._conn.close()
        self._process.join(timeout=self.spec.reply_timeout_s)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()

    def _receive(self) -> tuple:
        try:
            return self._conn.recv()
        except (EOFError, OSError):
            self._died()

    def _died(self, how: str | None = None) -> NoReturn:
        self._process.join(timeout=_REAP_S)
        how = how or f"died (exit code {self._process.exitcode}; -9 means it was killed)"
        raise WriterProcessError(
            f"the dataset writer process (pid {self._process.pid}) for {self.spec.root} {how}; "
            f"the episode in progress is lost. {_NEXT_STEP}"
        )

    def _at_exit(self) -> None:
        """At interpreter exit without close(): let the writer finish what it is doing, then stop it.

        Closing the pipe tells a healthy writer to discard the unsaved episode and exit (a save
        under way completes first). One that is hung or stopped is killed after a grace period;
        the next open repairs whatever it left.
        """
        self._conn.close()
        self._process.join(timeout=_EXIT_GRACE_S)
        if self._process.is_alive():
            logger.error("the dataset writer did not exit within %.0f s; killing it", _EXIT_GRACE_S)
            self._process.kill()
            self._process.join()


def longest_wait_s(timeout_s: float) -> float:
    """The longest a wait for a reply with `timeout_s` can block: the timeout, a poll step, the reaping."""
    return timeout_s + _POLL_S + _REAP_S
