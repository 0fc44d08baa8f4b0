"""Synchronised read: for each control tick, one frame per camera, with skew, age, drops, duplicates.

    capture threads (one per camera)          control loop (one thread)
    ────────────────────────────────          ──────────────────────────────────────────────
    left_wrist  -> FrameRing ─┐
    right_wrist -> FrameRing ─┼─> SyncReader.read(tick_time_s)
    overhead    -> FrameRing ─┘     1. stale check: newest frame older than max_frame_age_s?
                                       -> CameraStaleError / CameraDisconnectedError
                                    2. wait (<= max_wait_s) until a frame after the tick is in,
                                       or no later frame could be nearer    (not for LATEST)
                                    3. pick one frame per camera            (SelectionStrategy)
                                    4. account: skew, ages, dropped, duplicated -> SyncStats
                                    -> SyncedFrames

Waiting is what makes NEAREST honest: at the tick itself only older frames exist, so "nearest"
without waiting is just "latest". The wait ends as soon as each camera has a frame at or after the
tick, or once any frame still in flight would be farther from the tick than the best one already
buffered; for 30 fps cameras that is at most about half a period plus `delivery_margin_s`.

    reader = SyncReader(cameras.values(), SyncConfig())
    synced = reader.read(tick_time_s)  # tick_time_s: the loop's monotonic deadline for this tick
    synced.frames["overhead"].image, synced.skew_s, reader.stats().skew_p99_s
"""

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import MappingProxyType

from robot.cameras.camera import Camera
from robot.cameras.errors import CameraConfigError
from robot.cameras.frame import Frame
from robot.cameras.selection import SelectionStrategy, select_latest, select_min_skew, select_nearest
from robot.cameras.sync_stats import SyncedFrames, SyncStats, SyncStatsRecorder
from robot.config_checks import reject_non_finite

_READER = "sync"  # stands in for a camera name in errors about the reader itself
_FIX_SYNC = "fix the sync settings in the rig config"


@dataclass(frozen=True)
class SyncConfig:
    """How the synchronised read matches frames to ticks."""

    strategy: SelectionStrategy = SelectionStrategy.NEAREST  # nearest, latest or min_skew
    max_wait_s: float = 0.05  # longest a read blocks for frames captured after the tick, seconds
    delivery_margin_s: float = 0.01  # capture-to-buffer delay budget (decode, render), seconds
    # The next frame in sequence is kept over a nearer one while this close to the best match: a
    # camera whose phase sits near the half-period boundary then gives no duplicate/drop pairs.
    continuity_margin_s: float = 0.004  # seconds
    stats_window: int = 9000  # ticks kept for percentiles (5 min at 30 Hz)

    def __post_init__(self) -> None:
        reject_non_finite(self, "sync")
        strategies = [strategy.value for strategy in SelectionStrategy]
        for name, ok, allowed in (
            ("strategy", self.strategy in strategies, f"one of {strategies}"),
            ("max_wait_s", 0 <= self.max_wait_s <= 1, "0..1 s"),
            ("delivery_margin_s", 0 <= self.delivery_margin_s <= 0.5, "0..0.5 s"),
            ("continuity_margin_s", 0 <= self.continuity_margin_s <= 0.1, "0..0.1 s"),
            ("stats_window", self.stats_window >= 1, "an int >= 1"),
        ):
            if not ok:
                value = getattr(self, name)
                raise CameraConfigError(_READER, f"{name}={value!r} is not allowed; expected {allowed}", _FIX_SYNC)


class SyncReader:
    """Matches each control tick to one frame per camera. Used by one thread (the control loop)."""

    def __init__(
        self,
        cameras: Iterable[Camera],
        config: SyncConfig | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cameras = tuple(cameras)
        self.config = config or SyncConfig()
        self._clock = clock
        names = [camera.name for camera in self.cameras]
        if not names or len(set(names)) != len(names):
            problem = f"cameras={names} is not allowed; expected one or more unique names"
            raise CameraConfigError(_READER, problem, _FIX_SYNC)
        # MIN_SKEW looks one period of the slowest camera either side of the tick.
        self._window_s = max(1.0 / camera.fps for camera in self.cameras)
        margin_s = self.config.continuity_margin_s
        self._max_offset_s = {camera.name: 0.5 / camera.fps + margin_s for camera in self.cameras}
        self._stats = SyncStatsRecorder(names, self.config.stats_window)
        self._previous: dict[str, int] = {}
        self._previous_tick_s: float | None = None
        self._fps = {camera.name: camera.fps for camera in self.cameras}

    def read(self, tick_time_s: float) -> SyncedFrames:
        """The frames for the tick at `tick_time_s` (monotonic), blocking up to `max_wait_s`.

        Raises:
            CameraStaleError: a camera's newest frame is older than its `max_frame_age_s`.
            CameraDisconnectedError: a camera is not connected, or was lost.
        """
        if self.config.strategy == SelectionStrategy.LATEST:
            return self._select(tick_time_s, 0.0)
        start_s = self._clock()
        deadline_s = tick_time_s + self.config.max_wait_s
        for camera in self.cameras:
            self._wait_for_frame_after(camera, tick_time_s, deadline_s)
        return self._select(tick_time_s, self._clock() - start_s)

    def select(self, tick_time_s: float) -> SyncedFrames:
        """Like `read`, from the frames buffered now, without waiting (e.g. for past ticks)."""
        return self._select(tick_time_s, 0.0)

    def stats(self) -> SyncStats:
        """Statistics since construction or the last `reset()`."""
        return self._stats.snapshot()

    def reset(self) -> None:
        """Forget the previous tick's frames and the statistics (e.g. at a new episode)."""
        self._stats.reset()
        self._previous.clear()
        self._previous_tick_s = None

    def _wait_for_frame_after(self, camera: Camera, tick_time_s: float, deadline_s: float) -> None:
        while True:
            frames = camera.frames()
            newest_s = frames[-1].capture_time_s if frames else -math.inf
            if newest_s >= tick_time_s:
                return
            # A frame still in flight was captured after now - margin; once that is farther from
            # the tick than the newest buffered frame, waiting cannot improve the match.
            useful_until_s = tick_time_s + (tick_time_s - newest_s) + self.config.delivery_margin_s
            remaining_s = min(deadline_s, useful_until_s) - self._clock()
            if remaining_s <= 0:
                return
            # Wake on any newer frame: it may be the match, or move `useful_until_s` closer.
            if not camera.wait_for_frame_after(math.nextafter(newest_s, math.inf), remaining_s):
                return

    def _select(self, tick_time_s: float, wait_s: float) -> SyncedFrames:
        for camera in self.cameras:
            camera.latest()  # raises when stale or disconnected
        rings = {camera.name: camera.frames() for camera in self.cameras}
        # How far each camera should advance since the previous tick: 1 when the camera runs at the
        # loop's rate, 2 for a 60 fps camera at 30 Hz. Only frames skipped beyond that are dropped.
        interval_s = None if self._previous_tick_s is None else tick_time_s - self._previous_tick_s
        advance = {
            name: 1 if interval_s is None else max(1, round(interval_s * fps)) for name, fps in self._fps.items()
        }
        expected = {name: sequence + advance[name] for name, sequence in self._previous.items()}
        match self.config.strategy:
            case SelectionStrategy.LATEST:
                chosen = select_latest(rings, tick_time_s)
            case SelectionStrategy.MIN_SKEW:
                margin_s = self.config.continuity_margin_s
                chosen = select_min_skew(rings, tick_time_s, self._window_s, expected, margin_s)
            case _:
                chosen = select_nearest(rings, tick_time_s, expected, self._max_offset_s)
        synced = self._account(tick_time_s, chosen, wait_s, advance)
        self._stats.add(synced)
        return synced

    def _account(
        self, tick_time_s: float, chosen: dict[str, Frame], wait_s: float, advance: dict[str, int]
    ) -> SyncedFrames:
        dropped: dict[str, int] = {}
        duplicated: set[str] = set()
        for name, frame in chosen.items():
            previous = self._previous.get(name)
            dropped[name] = 0
            if previous is not None:
                if frame.sequence <= previous:
                    duplicated.add(name)
                else:
                    dropped[name] = max(0, frame.sequence - previous - advance[name])
            self._previous[name] = frame.sequence if previous is None else max(previous, frame.sequence)
        self._previous_tick_s = tick_time_s
        times = [frame.capture_time_s for frame in chosen.values()]
        ages_s = {name: tick_time_s - frame.capture_time_s for name, frame in chosen.items()}
        return SyncedFrames(
            tick_time_s=tick_time_s,
            frames=MappingProxyType(chosen),
            skew_s=max(times) - min(times),
            ages_s=MappingProxyType(ages_s),
            dropped=MappingProxyType(dropped),
            duplicated=frozenset(duplicated),
            wait_s=wait_s,
        )
