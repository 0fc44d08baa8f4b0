"""Running statistics of synchronised reads: skew, frame age, dropped and duplicated frames."""

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from robot.cameras.frame import Frame


@dataclass(frozen=True, eq=False)
class SyncedFrames:
    """The frames matched to one control tick, and how well they match."""

    tick_time_s: float  # the tick's monotonic time, seconds
    frames: Mapping[str, Frame]  # camera name -> frame
    skew_s: float  # newest minus oldest capture time among the frames, seconds
    ages_s: Mapping[str, float]  # tick minus capture time per camera (negative: after the tick), s
    dropped: Mapping[str, int]  # frames skipped since the previous tick's, beyond the expected advance
    duplicated: frozenset[str]  # cameras whose frame is not newer than the previous tick's
    wait_s: float  # how long the read blocked for frames captured after the tick, seconds


@dataclass(frozen=True)
class SyncStats:
    """Statistics over the ticks read since the last reset (percentiles over a recent window)."""

    ticks: int  # ticks read
    skew_p50_s: float  # median spread of capture times across cameras, seconds
    skew_p99_s: float
    skew_max_s: float  # over all ticks, not only the window
    age_p50_s: float  # median |tick - capture time| over every camera's frames, seconds
    age_p99_s: float
    age_max_s: float  # over all ticks
    wait_p99_s: float  # time read() blocked, seconds
    dropped: Mapping[str, int]  # frames skipped between consecutive ticks, per camera
    duplicated: Mapping[str, int]  # ticks that reused a frame, per camera

    def as_dict(self) -> dict[str, Any]:
        """Plain types, for JSON reports."""
        data = asdict(self)
        data["dropped"] = dict(self.dropped)
        data["duplicated"] = dict(self.duplicated)
        return data


class SyncStatsRecorder:
    """Accumulates `SyncedFrames` into `SyncStats`; one thread (the control loop) uses it."""

    def __init__(self, cameras: Sequence[str], window: int) -> None:
        self._cameras = tuple(cameras)
        self._window = window
        self.reset()

    def reset(self) -> None:
        """Start over (e.g. at a new episode)."""
        self._ticks = 0
        self._skews: deque[float] = deque(maxlen=self._window)
        self._ages: deque[float] = deque(maxlen=self._window * len(self._cameras))
        self._waits: deque[float] = deque(maxlen=self._window)
        self._skew_max_s = 0.0
        self._age_max_s = 0.0
        self._dropped = dict.fromkeys(self._cameras, 0)
        self._duplicated = dict.fromkeys(self._cameras, 0)

    def add(self, synced: SyncedFrames) -> None:
        """Count one tick."""
        self._ticks += 1
        self._skews.append(synced.skew_s)
        self._waits.append(synced.wait_s)
        self._skew_max_s = max(self._skew_max_s, synced.skew_s)
        for name in self._cameras:
            age_s = abs(synced.ages_s[name])
            self._ages.append(age_s)
            self._age_max_s = max(self._age_max_s, age_s)
            self._dropped[name] += synced.dropped[name]
            self._duplicated[name] += name in synced.duplicated

    def snapshot(self) -> SyncStats:
        """The statistics so far."""

        def percentile(values: deque[float], q: float) -> float:
            return float(np.percentile(np.fromiter(values, float), q)) if values else 0.0

        return SyncStats(
            ticks=self._ticks,
            skew_p50_s=percentile(self._skews, 50),
            skew_p99_s=percentile(self._skews, 99),
            skew_max_s=self._skew_max_s,
            age_p50_s=percentile(self._ages, 50),
            age_p99_s=percentile(self._ages, 99),
            age_max_s=self._age_max_s,
            wait_p99_s=percentile(self._waits, 99),
            dropped=dict(self._dropped),
            duplicated=dict(self._duplicated),
        )
