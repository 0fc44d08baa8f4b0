"""A stop request that a signal handler may raise.

`threading.Event.set()` takes a lock. Python runs signal handlers in the main thread between
bytecodes, so a second signal that arrives while a handler is inside `set()` runs the handler
again in the same thread, which then waits for a lock it holds itself, forever. That is how a
virtual rig outlived its recorder after a `kill -9`: SIGTERM from the kernel, then more, and the
server hung in its own handler with its four bus processes still serving. Loops that poll a flag
(every select timeout, every tick) need no lock: an attribute store is atomic under the GIL.
"""


class StopFlag:
    """A one-way flag: `set()` from anywhere (threads, signal handlers), `is_set()` to poll."""

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        """Ask for the stop; never blocks, safe to call again from a nested handler."""
        self._set = True

    def is_set(self) -> bool:
        """Whether a stop was asked for."""
        return self._set
