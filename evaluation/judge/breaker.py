"""A run-level circuit breaker: after N overloaded replies in a row, across all workers, no request starts.

    every reply of a judge request --overloaded (529, 503, overloaded_error)--> count + 1
                                  --any other reply--> count = 0
                                  --no reply (timeout, connection)--> unchanged
    count reaches N --> open for the rest of the run: each attempt about to start is refused

Without it, a sustained outage makes every call retry `judge.retry.max_attempts` times on up to
`run.concurrency` workers, all answered 529. The run pauses instead (requests already on the wire
finish), and the next run of the same command resumes: scored episodes are kept.
"""

from __future__ import annotations

import logging
import threading

from evaluation.errors import ConfigError

log = logging.getLogger(__name__)

BREAKER_OPEN = "breaker_open"  # failure reason of a call the open breaker stopped (JudgeCallError.reason)


class OverloadBreaker:
    """Counts consecutive overloaded replies of a run; thread-safe (shared by every worker)."""

    def __init__(self, max_consecutive_overloads: int) -> None:
        """Open after `max_consecutive_overloads` overloaded replies in a row (>= 1)."""
        if max_consecutive_overloads < 1:
            raise ConfigError(f"run.pause_after_overloads={max_consecutive_overloads} must be >= 1")
        self.max_consecutive_overloads = max_consecutive_overloads
        self._lock = threading.Lock()
        self._consecutive = 0
        self._open = False

    @property
    def is_open(self) -> bool:
        """Whether the run is paused (no request may start)."""
        with self._lock:
            return self._open

    def record_reply(self, overloaded: bool) -> None:
        """Count one HTTP reply: an overloaded one adds to the run of them, any other ends it."""
        with self._lock:
            if not overloaded:
                self._consecutive = 0
                return
            self._consecutive += 1
            opened = not self._open and self._consecutive >= self.max_consecutive_overloads
            self._open = self._open or opened
        if opened:
            log.warning("%s; pausing the run: no new requests start", self.reason())

    def reason(self) -> str:
        """Why the breaker opened, in words (one line)."""
        return (
            f"{self.max_consecutive_overloads} requests in a row were answered overloaded "
            "(HTTP 529, or 503 / overloaded_error)"
        )
