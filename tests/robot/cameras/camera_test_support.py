"""Test doubles for the camera tests: a discrete-event clock and a camera with scripted frames."""

import threading
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Self

import numpy as np

from robot.cameras.config import CaptureConfig, VirtualCameraConfig
from robot.cameras.errors import CameraStaleError
from robot.cameras.frame import Frame
from robot.cameras.virtual.camera import VirtualCamera

# Small frames keep renders cheap; fast reconnects keep fault tests short.
SMALL = {"width": 160, "height": 120}
FAST_CAPTURE = CaptureConfig(ring_size=64, reconnect_delay_s=0.01, reconnect_attempts=2)
T = 1 / 30  # frame period at 30 fps, seconds

# The `virtual_cameras` fixture: make(configs, clock=None, epoch_s=None) -> connected cameras.
MakeCameras = Callable[..., list[VirtualCamera]]


def virtual_config(name: str, **overrides: object) -> VirtualCameraConfig:
    """A small virtual camera config with a large ring, for tests."""
    fields: dict[str, object] = {"name": name, **SMALL, "capture": FAST_CAPTURE, **overrides}
    return VirtualCameraConfig(**fields)  # type: ignore[arg-type]


class ManualClock:
    """Virtual monotonic time that only the test moves; capture threads sleep on it.

    A thread's `sleep()` blocks until the test has advanced time past its wake-up time, so a
    scenario unfolds the same on an idle laptop and on a loaded CI machine, and faster than real
    time. `release()` lets every sleeper go (call it before disconnecting).
    """

    def __init__(self, start_s: float = 1000.0) -> None:
        self._now_s = start_s
        self._targets: dict[int, float] = {}  # thread id -> the time it sleeps until
        self._released = False
        self._changed = threading.Condition()

    def __call__(self) -> float:
        with self._changed:
            return self._now_s

    def sleep(self, seconds: float) -> None:
        me = threading.get_ident()
        with self._changed:
            target_s = self._now_s + max(0.0, seconds)
            self._targets[me] = target_s
            self._changed.notify_all()
            while self._now_s < target_s and not self._released:
                self._changed.wait(0.5)
            del self._targets[me]

    def advance_to(self, time_s: float, sleepers: int, timeout_s: float = 20.0) -> None:
        """Move time to `time_s`, then wait until `sleepers` threads sleep beyond it (caught up)."""

        def caught_up() -> bool:
            return sum(target > self._now_s for target in self._targets.values()) >= sleepers

        with self._changed:
            self._now_s = max(self._now_s, time_s)
            self._changed.notify_all()
            if not self._changed.wait_for(caught_up, timeout_s):
                raise AssertionError(f"capture threads did not catch up with t={time_s:.3f}")

    def release(self) -> None:
        with self._changed:
            self._released = True
            self._changed.notify_all()


def run_until(clock: "ManualClock", cameras: Sequence[VirtualCamera], end_s: float) -> None:
    """Move time one period at a time, letting every capture thread keep up."""
    while clock() < end_s:
        clock.advance_to(min(end_s, clock() + T), sleepers=len(cameras))


def frame(camera: str, capture_time_s: float, sequence: int) -> Frame:
    """A tiny frame for selection and accounting tests."""
    return Frame(camera, np.zeros((2, 2, 3), np.uint8), capture_time_s, sequence)


class FakeTime:
    """A clock the test sets; `ScriptedCamera` moves it forward when a read waits for a frame."""

    def __init__(self, now_s: float = 0.0) -> None:
        self.now_s = now_s

    def __call__(self) -> float:
        return self.now_s


class ScriptedCamera:
    """A `Camera` whose frames the test provides; a frame is buffered `delivery_s` after capture.

    `wait_for_frame_after` simulates the wait: it moves the fake clock to the arrival of the frame
    waited for (or by the whole timeout), so the sync reader's waiting is tested exactly.
    """

    def __init__(
        self,
        name: str,
        frames: Sequence[Frame],
        clock: FakeTime | Callable[[], float],
        fps: float = 30.0,
        max_frame_age_s: float = 0.25,
        delivery_s: float = 0.0,
    ) -> None:
        self._name = name
        self._frames = sorted(frames, key=lambda f: f.capture_time_s)
        self._clock = clock
        self._fps = fps
        self._max_frame_age_s = max_frame_age_s
        self._delivery_s = delivery_s

    name = property(lambda self: self._name)
    fps = property(lambda self: self._fps)
    width = property(lambda self: 2)
    height = property(lambda self: 2)
    is_connected = property(lambda self: True)

    def connect(self) -> None:
        pass

    def disconnect(self) -> None:
        pass

    def frames(self) -> tuple[Frame, ...]:
        now_s = self._clock()
        return tuple(f for f in self._frames if f.capture_time_s + self._delivery_s <= now_s)

    def latest(self) -> Frame:
        frames = self.frames()
        if not frames or self._clock() - frames[-1].capture_time_s > self._max_frame_age_s:
            raise CameraStaleError(self._name, "no recent frame")
        return frames[-1]

    def wait_for_frame_after(self, time_s: float, timeout_s: float) -> bool:
        arrivals = [f.capture_time_s + self._delivery_s for f in self._frames if f.capture_time_s >= time_s]
        now_s = self._clock()
        if arrivals and min(arrivals) <= now_s + timeout_s:
            if isinstance(self._clock, FakeTime):
                self._clock.now_s = max(now_s, min(arrivals))
            return True
        if isinstance(self._clock, FakeTime):
            self._clock.now_s = now_s + max(0.0, timeout_s)
        return False

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        pass
