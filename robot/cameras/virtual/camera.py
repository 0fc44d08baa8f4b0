"""`VirtualCamera`: frames rendered from the virtual rig on a seeded schedule, with injectable faults.

    with VirtualCamera(VirtualCameraConfig(name="overhead", phase_s=0.01), scene) as camera:
        frame = camera.latest()
        camera.freeze()  # no new frames: readers get CameraStaleError after max_frame_age_s
        camera.unplug()  # reads fail, reconnects fail: CameraDisconnectedError

Timing: the capture thread sleeps to each slot's absolute capture time (`FrameSchedule`), so
there is no drift; a frame's `capture_time_s` is that scheduled time (like a hardware
start-of-exposure stamp) and its image shows the scene when the thread woke, normally well
under a millisecond later. A thread that falls more than `_MAX_BACKLOG_SLOTS` behind (a stalled
host) skips slots, which readers see as sequence gaps, as with a real camera's driver buffers.
"""

import logging
import threading
import time
from collections.abc import Callable

from robot.cameras.config import VirtualCameraConfig
from robot.cameras.errors import CameraDisconnectedError, CameraNotFoundError
from robot.cameras.frame import Frame
from robot.cameras.threaded import ThreadedCamera
from robot.cameras.virtual.scene import VirtualScene
from robot.cameras.virtual.schedule import FrameSchedule
from robot.cameras.virtual.views import make_renderer

logger = logging.getLogger(__name__)

_MAX_BACKLOG_SLOTS = 4  # V4L2's default number of driver buffers
_REPLUG = "call replug() to plug the virtual camera back in"


class VirtualFrameSource:
    """A `FrameSource` that renders a `VirtualScene` on a `FrameSchedule`."""

    def __init__(
        self,
        config: VirtualCameraConfig,
        scene: VirtualScene,
        epoch_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._config = config
        self._scene = scene
        self._epoch_s = epoch_s
        self._clock = clock
        self._sleep = sleep
        self._render = make_renderer(config.view, scene.layout, config.width, config.height)
        self._frozen = threading.Event()
        self._unplugged = threading.Event()
        self._open = False
        self._first_open_s: float | None = None
        self._next_slot = 0
        self.schedule: FrameSchedule | None = None  # set at the first open

    def freeze(self) -> None:
        """Stop delivering frames (the capture thread keeps running, as in a hung camera)."""
        self._frozen.set()

    def unfreeze(self) -> None:
        """Deliver frames again."""
        self._frozen.clear()

    def unplug(self) -> None:
        """Make reads fail and reopening impossible, like a pulled cable."""
        self._unplugged.set()

    def replug(self) -> None:
        """Let the next reconnect attempt succeed."""
        self._unplugged.clear()

    def open(self) -> None:
        """Start (or resume) the schedule at the next slot (see `FrameSource`)."""
        if self._unplugged.is_set():
            raise CameraNotFoundError(self._config.name, "the virtual camera is unplugged", _REPLUG)
        now_s = self._clock()
        if self.schedule is None:
            config = self._config
            epoch_s = now_s if self._epoch_s is None else self._epoch_s
            self.schedule = FrameSchedule(
                config.fps, epoch_s, config.phase_s, config.jitter_s, config.drop_rate, config.seed
            )
            self._first_open_s = now_s
        self._next_slot = max(self._next_slot, self.schedule.first_slot_after(now_s))
        self._open = True

    def _apply_scripted_faults(self, now_s: float) -> None:
        connected_s = now_s - (self._first_open_s or now_s)
        if self._config.freeze_after_s is not None and connected_s >= self._config.freeze_after_s:
            self._frozen.set()
        if self._config.disconnect_after_s is not None and connected_s >= self._config.disconnect_after_s:
            self._unplugged.set()

    def _plugged_schedule(self) -> FrameSchedule:
        if self._unplugged.is_set() or not self._open or self.schedule is None:
            raise CameraDisconnectedError(self._config.name, "the virtual camera was unplugged", _REPLUG)
        return self.schedule

    def read(self) -> Frame | None:
        """Sleep to the next slot, then render it unless it is dropped or frozen (see `FrameSource`)."""
        self._apply_scripted_faults(self._clock())
        schedule = self._plugged_schedule()
        slot = self._next_slot
        capture_time_s = schedule.capture_time_s(slot)
        wait_s = capture_time_s - self._clock()
        if wait_s > 0:
            self._sleep(wait_s)
        now_s = self._clock()
        behind = int((now_s - capture_time_s) * schedule.fps)
        if behind > _MAX_BACKLOG_SLOTS:
            logger.debug("camera %r: %d slots behind, skipping them", self._config.name, behind)
            slot += behind
            capture_time_s = schedule.capture_time_s(slot)
        self._next_slot = slot + 1
        self._apply_scripted_faults(now_s)
        self._plugged_schedule()
        if self._frozen.is_set() or schedule.is_dropped(slot):
            return None
        return Frame(self._config.name, self._render(self._scene.observe()), capture_time_s, slot)

    def close(self) -> None:
        """Stop reading until the next open (see `FrameSource`)."""
        self._open = False


class VirtualCamera(ThreadedCamera):
    """A synthetic camera on the virtual rig: `VirtualFrameSource` in a capture thread."""

    def __init__(
        self,
        config: VirtualCameraConfig,
        scene: VirtualScene,
        epoch_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """Create the camera; `epoch_s` (monotonic) is shared by a rig's cameras so phases line up."""
        self._virtual = VirtualFrameSource(config, scene, epoch_s, clock, sleep)
        super().__init__(config.name, config.fps, config.width, config.height, self._virtual, config.capture, clock)
        self.config = config
        self.scene = scene  # the world it shows, shared with the rig's other virtual cameras

    @property
    def schedule(self) -> FrameSchedule | None:
        """The frame schedule (None before the first connect)."""
        return self._virtual.schedule

    def freeze(self) -> None:
        """Inject a freeze: no new frames until `unfreeze()`."""
        self._virtual.freeze()

    def unfreeze(self) -> None:
        """End a freeze."""
        self._virtual.unfreeze()

    def unplug(self) -> None:
        """Inject a disconnect: reads and reconnects fail until `replug()`."""
        self._virtual.unplug()

    def replug(self) -> None:
        """End a disconnect; the capture thread's next reconnect attempt succeeds."""
        self._virtual.replug()
