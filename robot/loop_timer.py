"""Pacing for every control loop: absolute monotonic deadlines, overrun accounting, rate statistics.

    deadline k = start + k * period          (never "now + period": no drift)

    timer = LoopTimer(fps=30)
    for tick in timer:             # sleeps until each deadline
        ...one control step...
        if done: break
    print(timer.stats())

When a step overruns past the next deadline, the missed deadlines are skipped (counted, not
caught up in a burst), so the loop stays on its grid and cameras on theirs. LeRobot's loops sleep
`1/fps - dt` instead, which drifts (-0.6 % idle, -3.2 % beside an encoder on this machine).
"""

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Tick:
    """One loop iteration."""

    index: int  # grid index of this tick (skipped deadlines leave gaps)
    deadline_s: float  # the monotonic time it was due
    start_s: float  # when it actually started
    skipped: int  # deadlines skipped just before this tick because the previous step overran

    @property
    def late_s(self) -> float:
        """How late the tick started."""
        return self.start_s - self.deadline_s


@dataclass(frozen=True)
class LoopStats:
    """Achieved timing of a loop run."""

    ticks: int
    target_hz: float
    achieved_hz: float
    rate_error: float  # achieved / target - 1 (counting skipped deadlines as missed ticks)
    period_deviation_p50_ms: float  # |period - target| between consecutive tick starts
    period_deviation_p99_ms: float
    period_deviation_max_ms: float
    late_p99_ms: float  # tick start after its deadline
    overruns: int  # ticks whose step ran past the next deadline
    skipped: int  # deadlines skipped because of overruns


class LoopTimer:
    """Paces a loop on absolute deadlines. Not thread-safe: one loop owns it."""

    def __init__(
        self,
        fps: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if fps <= 0:
            raise ValueError(f"fps={fps}: must be > 0")
        self.fps = fps
        self.period_s = 1.0 / fps
        self._clock = clock
        self._sleep = sleep
        self._start_s: float | None = None
        self._next_index = 0
        self._starts: list[float] = []
        self._late: list[float] = []
        self.overruns = 0
        self.skipped = 0

    def start(self) -> float:
        """Anchor the grid at now (the first tick is due immediately); returns the anchor."""
        self._start_s = anchor = self._clock()
        self._next_index = 0
        self._starts.clear()
        self._late.clear()
        self.overruns = 0
        self.skipped = 0
        return anchor

    def wait(self) -> Tick:
        """Sleep until the next deadline and return the tick that starts there."""
        start = self._start_s if self._start_s is not None else self.start()
        now = self._clock()
        index = self._next_index
        deadline = start + index * self.period_s
        skipped = 0
        if now > deadline + self.period_s:
            # The previous step overran past a whole period: skip to the latest deadline passed.
            behind = int((now - deadline) / self.period_s)
            skipped = behind
            index += behind
            deadline = start + index * self.period_s
            self.overruns += 1
            self.skipped += skipped
        elif now < deadline:
            self._sleep(deadline - now)
            now = self._clock()
        self._next_index = index + 1
        self._starts.append(now)
        self._late.append(max(0.0, now - deadline))
        return Tick(index=index, deadline_s=deadline, start_s=now, skipped=skipped)

    def __iter__(self) -> Iterator[Tick]:
        self.start()
        while True:
            yield self.wait()

    def stats(self) -> LoopStats:
        """Timing statistics of the ticks so far."""
        starts = np.asarray(self._starts)
        ticks = len(starts)
        if ticks < 2:
            return LoopStats(ticks, self.fps, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, self.overruns, self.skipped)
        periods = np.diff(starts)
        deviation_ms = np.abs(periods - self.period_s) * 1000
        achieved = (ticks - 1) / (starts[-1] - starts[0])
        late_ms = np.asarray(self._late) * 1000
        return LoopStats(
            ticks=ticks,
            target_hz=self.fps,
            achieved_hz=float(achieved),
            rate_error=float(achieved / self.fps - 1.0),
            period_deviation_p50_ms=float(np.percentile(deviation_ms, 50)),
            period_deviation_p99_ms=float(np.percentile(deviation_ms, 99)),
            period_deviation_max_ms=float(deviation_ms.max()),
            late_p99_ms=float(np.percentile(late_ms, 99)),
            overruns=self.overruns,
            skipped=self.skipped,
        )
