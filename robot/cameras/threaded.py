"""`ThreadedCamera`: any `FrameSource` run in its own capture thread, with a ring of recent frames.

    FrameSource.read() --(capture thread)--> FrameRing --> latest() / frames() / wait_for_frame_after()
          ^    | CameraReadError x N                          (stale check: newest frame's age)
          |    v
          +-- close(); open()  (bounded reconnect) -- all failed --> CameraDisconnectedError

OpenCV and virtual cameras share this code: the fault handling exercised by the virtual cameras'
tests is the same that runs for real USB cameras.
"""

import logging
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Self

from robot.cameras.camera import FrameSource
from robot.cameras.config import CaptureConfig
from robot.cameras.errors import (
    CHECK_DEVICE,
    CameraDisconnectedError,
    CameraError,
    CameraReadError,
    CameraStaleError,
)
from robot.cameras.frame import Frame
from robot.cameras.ring import ANY_TIME_S, FrameRing
from robot.realtime import make_realtime

logger = logging.getLogger(__name__)

# A capture thread blocked in a device read gets this long to notice a stop request.
_JOIN_TIMEOUT_S = 2.0


class ThreadedCamera:
    """A `Camera`: opens a `FrameSource`, reads it in a daemon thread, buffers recent frames.

    Thread-safety: all public methods may be called from any thread.
    """

    def __init__(
        self,
        name: str,
        fps: float,
        width: int,
        height: int,
        source: FrameSource,
        capture: CaptureConfig,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        capture.check(name)
        self._name = name
        self._fps = fps
        self._width = width
        self._height = height
        self._source = source
        self._capture = capture
        self._clock = clock
        self._ring = FrameRing(capture.ring_frames(fps))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._blocked_thread: threading.Thread | None = None
        self._failure: CameraError | None = None
        self._status = "not connected"
        self.reconnects = 0  # successful reconnects since construction (for the doctor)

    @property
    def name(self) -> str:
        """The camera's name."""
        return self._name

    @property
    def fps(self) -> float:
        """Nominal frames per second."""
        return self._fps

    @property
    def width(self) -> int:
        """Image width in pixels."""
        return self._width

    @property
    def height(self) -> int:
        """Image height in pixels."""
        return self._height

    @property
    def is_connected(self) -> bool:
        """True while the capture thread runs and has not failed."""
        return self._thread is not None and self._thread.is_alive() and self._failure is None

    def connect(self) -> None:
        """Open the source, start the capture thread, wait for the first frame (see `Camera`)."""
        if self.is_connected:
            raise CameraError(self._name, "connect() called while connected", "call disconnect() first")
        self.disconnect()  # after a failure: join the finished thread first
        if self._blocked_thread is not None and self._blocked_thread.is_alive():
            raise CameraError(
                self._name,
                "its previous capture thread is still blocked inside the camera driver",
                "unplug and replug the camera, then run so101-doctor",
            )
        self._source.open()
        self._failure = None
        self._ring.clear()
        self._stop.clear()
        self._status = "capturing"
        self._thread = threading.Thread(target=self._run, name=f"camera-{self._name}", daemon=True)
        self._thread.start()
        timeout_s = self._capture.connect_timeout_s
        if not self._ring.wait_for_capture_after(ANY_TIME_S, timeout_s):
            failure = self._failure
            self.disconnect()
            if failure is not None:
                raise failure
            raise CameraStaleError(self._name, f"opened, but no frame arrived within {timeout_s:.1f} s", CHECK_DEVICE)
        logger.info("camera %r connected (%dx%d at %.1f fps)", self._name, self._width, self._height, self._fps)

    def disconnect(self) -> None:
        """Stop the capture thread (which releases the device); safe to call twice."""
        thread = self._thread
        if thread is None:
            return
        self._stop.set()
        self._ring.interrupt()
        thread.join(timeout=max(_JOIN_TIMEOUT_S, 3.0 / self._fps))
        if thread.is_alive():
            # Blocked inside a driver call; it closes the source itself once that returns, and
            # until then connect() refuses to open the device a second time.
            logger.warning("camera %r: capture thread still blocked in a read after disconnect", self._name)
            self._blocked_thread = thread
        self._thread = None
        self._status = "not connected"
        logger.info("camera %r disconnected", self._name)

    def latest(self) -> Frame:
        """The newest frame, if younger than `max_frame_age_s` (see `Camera`)."""
        self._raise_if_unusable()
        newest = self._ring.newest()
        now_s = self._clock()
        bound_s = self._capture.max_frame_age_s
        if newest is None or now_s - newest.capture_time_s > bound_s:
            age = "no frame yet" if newest is None else f"newest frame is {now_s - newest.capture_time_s:.3f} s old"
            raise CameraStaleError(
                self._name,
                f"{age} (allowed {bound_s:.3f} s; capture thread: {self._status})",
                "check the cable and that no other program uses the camera, then run so101-doctor",
            )
        return newest

    def frames(self) -> tuple[Frame, ...]:
        """The frames in the ring, oldest first (see `Camera`)."""
        self._raise_if_unusable()
        return self._ring.snapshot()

    def wait_for_frame_after(self, time_s: float, timeout_s: float) -> bool:
        """Block until a frame captured at or after `time_s` is buffered (see `Camera`)."""
        if self._failure is not None or self._thread is None:
            return False
        return self._ring.wait_for_capture_after(time_s, timeout_s)

    def __enter__(self) -> Self:
        """Connect."""
        self.connect()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Disconnect."""
        self.disconnect()

    def _raise_if_unusable(self) -> None:
        if self._failure is not None:
            # A fresh traceback per raise: re-raising one object would grow its traceback forever.
            raise self._failure.with_traceback(None)
        if self._thread is None:
            raise CameraDisconnectedError(self._name, "not connected", "connect it first (or enter the rig)")

    def _run(self) -> None:
        make_realtime(self._capture.realtime_priority)  # no-op at 0 or when not permitted
        failures = 0
        try:
            while not self._stop.is_set():
                try:
                    frame = self._source.read()
                except (CameraReadError, CameraDisconnectedError) as e:
                    failures += 1
                    logger.debug("camera %r: read failed (%d in a row): %s", self._name, failures, e)
                    if failures >= self._capture.read_failures_before_reconnect:
                        if not self._reconnect(e):
                            return
                        failures = 0
                    continue
                failures = 0
                if frame is not None:
                    self._ring.push(frame)
        except CameraError as e:
            logger.exception("camera %r: capture thread failed", self._name)
            self._fail(e, e)
        except Exception as e:  # a bug or an unexpected driver error: surface it to the reader
            logger.exception("camera %r: capture thread failed", self._name)
            self._fail(CameraError(self._name, f"capture thread failed: {e!r}"), e)
        finally:
            self._source.close()

    def _reconnect(self, cause: CameraError) -> bool:
        attempts = self._capture.reconnect_attempts
        last: CameraError = cause
        for attempt in range(1, attempts + 1):
            self._status = f"reconnecting, attempt {attempt}/{attempts}"
            logger.warning("camera %r: %s; reconnecting (attempt %d/%d)", self._name, last.problem, attempt, attempts)
            self._source.close()
            if self._stop.wait(self._capture.reconnect_delay_s):
                return False
            try:
                self._source.open()
            except CameraError as e:
                last = e
                continue
            self.reconnects += 1
            self._status = "capturing"
            logger.info("camera %r: reconnected", self._name)
            return True
        problem = f"lost ({last.problem}); {attempts} reconnect attempt(s) failed"
        self._fail(CameraDisconnectedError(self._name, problem), last)
        return False

    def _fail(self, error: CameraError, cause: BaseException) -> None:
        if error is not cause:
            error.__cause__ = cause
        self._status = "failed"
        self._failure = error
        self._ring.interrupt()
