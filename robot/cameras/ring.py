"""A camera's recent frames: a bounded, thread-safe ring that the sync reader can wait on."""

import math
import threading
import time
from collections import deque

from robot.cameras.frame import Frame


class FrameRing:
    """The last `capacity` frames of one camera, oldest first.

    One producer (the capture thread) pushes; any number of consumers read snapshots or wait
    for a frame captured after some time. `interrupt()` wakes every waiter, for a camera that
    failed or is disconnecting.
    """

    def __init__(self, capacity: int) -> None:
        self._frames: deque[Frame] = deque(maxlen=capacity)
        self._changed = threading.Condition()
        self._interrupted = False

    def push(self, frame: Frame) -> None:
        """Append a frame (evicting the oldest when full) and wake the waiters."""
        with self._changed:
            self._frames.append(frame)
            self._changed.notify_all()

    def clear(self) -> None:
        """Forget every frame and clear an earlier interrupt (a fresh connect)."""
        with self._changed:
            self._frames.clear()
            self._interrupted = False

    def interrupt(self) -> None:
        """Make current and future waits return at once, until the next `clear()`."""
        with self._changed:
            self._interrupted = True
            self._changed.notify_all()

    def snapshot(self) -> tuple[Frame, ...]:
        """The frames now in the ring, oldest first."""
        with self._changed:
            return tuple(self._frames)

    def newest(self) -> Frame | None:
        """The most recent frame, or None before the first."""
        with self._changed:
            return self._frames[-1] if self._frames else None

    def wait_for_capture_after(self, time_s: float, timeout_s: float) -> bool:
        """Block until the newest frame was captured at or after `time_s` (monotonic seconds).

        Returns False on timeout or interrupt. `time_s=-math.inf` waits for any frame.
        """
        deadline_s = time.monotonic() + max(0.0, timeout_s)
        with self._changed:
            while True:
                if self._frames and self._frames[-1].capture_time_s >= time_s:
                    return True
                remaining_s = deadline_s - time.monotonic()
                if self._interrupted or remaining_s <= 0:
                    return False
                self._changed.wait(remaining_s)


ANY_TIME_S = -math.inf
