"""Pacing a replay: real time at the dataset's rate, or as fast as the stack can go.

    loop = ControlLoop(rig, source, **pacing(Pace.FAST))   # its timer on a clock only its own sleeps move

As fast as possible builds the same loop: its `LoopTimer` runs on a `SimulatedClock` whose `sleep`
advances the clock instead of waiting. Deadlines stay on the dataset's grid (tick k is due
at k / fps on that clock), nothing ever sleeps, and no tick is late or skipped, so the frame a tick
replays is the same in both paces. Everything else (bus I/O, the safety layer's own timing, the
hooks) runs on real time, as it would at real-time pace.
"""

import time
from collections.abc import Callable
from enum import StrEnum


class Pace(StrEnum):
    """How a replay is paced."""

    REALTIME = "realtime"  # one tick per period of the replay rate, as on the real rig
    FAST = "fast"  # no waiting between ticks: as fast as the rig (or the dry arms) answer


class SimulatedClock:
    """A monotonic clock that moves only when something sleeps on it."""

    def __init__(self, start_s: float | None = None) -> None:
        self.now_s = time.monotonic() if start_s is None else start_s

    def __call__(self) -> float:
        """The clock's time, s."""
        return self.now_s

    def sleep(self, seconds: float) -> None:
        """Advance the clock (never waits)."""
        self.now_s += max(0.0, seconds)


def pacing(mode: Pace) -> dict[str, Callable]:
    """The clock and sleep a `ControlLoop` is built with for `mode` (real time: the loop's own)."""
    if mode is Pace.FAST:
        clock = SimulatedClock()
        return {"clock": clock, "sleep": clock.sleep}
    return {}
