"""Highlights: the policy runs on unrecorded, and a key keeps the last seconds and what follows.

    no episode    every tick is remembered (the last `keep_s`, within `max_memory_mb`), nothing written
    k             an episode starts with the remembered ticks, then records live (LeRobot's highlight)
    k again       the episode ends and is saved (or at --session.episode_s, pre-roll included)

The remembered ticks are handed to the episode's recorder a few per tick (`FEED_PER_TICK`), before
the live ones, so the control loop never stalls on seconds of frames at once; the writer queues what
its shared-memory ring cannot take yet (teleop/dataset/spill.py). Each tick is kept with what the
recorder needs of it (its safety events, the peak motor temperature, whether the watchdog held), so
a kept tick is recorded exactly as it would have been live. Camera frames are not copied: a capture
is a new array each time (robot/cameras), and a tick only holds references to them.
"""

from collections import deque
from dataclasses import dataclass

from robot.config_checks import reject_non_finite
from robot.control_loop import Step
from robot.errors import ConfigError
from robot.rig import BimanualRig
from robot.safety.guard import SafetyEvent
from teleop.recorder import EpisodeRecorder

FEED_PER_TICK = 15  # remembered ticks handed to the recorder per live tick (a 10 s pre-roll: in 20 ticks)


@dataclass(frozen=True)
class HighlightConfig:
    """What a highlight keeps from before its key (so101-deploy --mode=highlight)."""

    keep_s: float = 10.0  # seconds before the key that start the episode
    max_memory_mb: float = 1024.0  # the remembered ticks' camera frames never take more than this, MB

    def __post_init__(self) -> None:
        reject_non_finite(self, "highlight")
        if not self.keep_s > 0 or not self.max_memory_mb > 0:
            raise ConfigError(f"highlight.keep_s={self.keep_s}, max_memory_mb={self.max_memory_mb}: both must be > 0")


@dataclass(frozen=True)
class Tick:
    """One control tick as the recorder takes it."""

    step: Step
    events: tuple[SafetyEvent, ...]  # the safety layer's interventions of this tick
    peak_temperature_c: float
    held: bool  # the watchdog held the followers this tick


def tick_of(step: Step, rig: BimanualRig, events_mark: int, held_mark: int) -> Tick:
    """`step` with the rig's facts of it (its events since `events_mark`, held since `held_mark`)."""
    temps = [a.last_health.max_temperature_c for a in rig.arms.values() if a.last_health]
    counters = rig.counters
    return Tick(step, tuple(counters.events[events_mark:]), max(temps, default=0.0), counters.held_ticks > held_mark)


class Highlights:
    """The pre-roll while nothing records, and the queue that feeds it to an episode."""

    def __init__(self, config: HighlightConfig, fps: int) -> None:
        self.config = config
        self.fps = fps
        self._remembered: deque[Tick] = deque()
        self._bytes = 0
        self._queue: deque[Tick] = deque()

    def remember(self, tick: Tick) -> None:
        """Keep a tick of no episode; the oldest go beyond `keep_s` or the memory bound."""
        self._remembered.append(tick)
        self._bytes += _image_bytes(tick)
        limit = self.config.max_memory_mb * 1e6
        while self._remembered and (
            len(self._remembered) > round(self.config.keep_s * self.fps) or self._bytes > limit
        ):
            self._bytes -= _image_bytes(self._remembered.popleft())

    @property
    def remembered_s(self) -> float:
        """How many seconds a highlight started now would begin with."""
        return len(self._remembered) / self.fps

    def start(self) -> None:
        """An episode starts: the remembered ticks are its first."""
        self._queue, self._remembered, self._bytes = self._remembered, deque(), 0

    def record(self, recorder: EpisodeRecorder, tick: Tick) -> None:
        """A live tick of the episode: recorded after every remembered one still queued."""
        self._queue.append(tick)
        self._feed(recorder, FEED_PER_TICK + 1)

    def finish(self, recorder: EpisodeRecorder) -> None:
        """The episode ends: whatever is still queued is recorded now."""
        self._feed(recorder, len(self._queue))

    def drop(self) -> None:
        """The episode was discarded: forget its queue."""
        self._queue.clear()

    def _feed(self, recorder: EpisodeRecorder, count: int) -> None:
        for _ in range(min(count, len(self._queue))):
            tick = self._queue.popleft()
            recorder.add(tick.step, 0, list(tick.events), tick.peak_temperature_c, tick.held)


def _image_bytes(tick: Tick) -> int:
    frames = tick.step.observation.frames
    return 0 if frames is None else sum(frame.image.nbytes for frame in frames.frames.values())
