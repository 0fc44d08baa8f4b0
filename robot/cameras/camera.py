"""The seams: `Camera` (what the rig and the sync reader use) and `FrameSource` (one device's reads).

A `Camera` owns a capture thread that keeps a short ring of recent frames. Implementations:
`OpenCVCamera` (USB cameras) and `VirtualCamera` (synthetic frames from the virtual rig), both
built on `ThreadedCamera`, which runs any `FrameSource` in that thread.
"""

from types import TracebackType
from typing import Protocol, Self, runtime_checkable

from robot.cameras.frame import Frame


@runtime_checkable
class Camera(Protocol):
    """A connected camera delivers timestamped frames from its own capture thread.

    Thread-safety: every method may be called from any thread; frames are immutable.
    """

    @property
    def name(self) -> str:
        """The camera's name, e.g. "overhead"; also its key in observations."""
        ...

    @property
    def fps(self) -> float:
        """Nominal frames per second."""
        ...

    @property
    def width(self) -> int:
        """Image width in pixels."""
        ...

    @property
    def height(self) -> int:
        """Image height in pixels."""
        ...

    @property
    def is_connected(self) -> bool:
        """True while the capture thread runs and has not failed."""
        ...

    def connect(self) -> None:
        """Open the device, start the capture thread and wait for the first frame.

        Raises:
            CameraNotFoundError: no such device.
            CameraConfigError: the device will not deliver the requested size or rate.
            CameraStaleError: no first frame within the connect timeout.
        """
        ...

    def disconnect(self) -> None:
        """Stop the capture thread and release the device; safe to call twice."""
        ...

    def latest(self) -> Frame:
        """The newest frame, without blocking.

        Raises:
            CameraStaleError: the newest frame is older than the camera's `max_frame_age_s`.
            CameraDisconnectedError: not connected, or lost and not recovered.
        """
        ...

    def frames(self) -> tuple[Frame, ...]:
        """The recent frames in the ring, oldest first, without blocking.

        Raises:
            CameraDisconnectedError: not connected, or lost and not recovered.
        """
        ...

    def wait_for_frame_after(self, time_s: float, timeout_s: float) -> bool:
        """Block until a frame captured at or after `time_s` (monotonic) is in the ring.

        Returns False when `timeout_s` passes first, or the camera fails meanwhile.
        """
        ...

    def __enter__(self) -> Self:
        """Connect."""
        ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Disconnect."""
        ...


class FrameSource(Protocol):
    """One device's open/read/close, run by `ThreadedCamera`'s capture thread.

    `open` is first called from `connect()`'s thread, then only from the capture thread (to
    reconnect); `read` and `close` only from the capture thread.
    """

    def open(self) -> None:
        """Open (or reopen) the device.

        Raises:
            CameraNotFoundError: no such device.
            CameraConfigError: the device will not deliver the requested format.
        """
        ...

    def read(self) -> Frame | None:
        """Block until the next frame (at most about one frame period plus device timeouts).

        Returns None when there is no frame this time (a dropped or frozen frame), so the
        capture thread can check for a stop request between frames.

        Raises:
            CameraReadError: the read failed; the thread retries, then reconnects.
            CameraDisconnectedError: the device is gone; the thread reconnects.
        """
        ...

    def close(self) -> None:
        """Release the device; safe to call when not open."""
        ...
