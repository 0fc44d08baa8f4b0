"""When a virtual camera's sensor captures frame k, and whether frame k is lost: pure and seeded.

    capture_time_s(k) = epoch_s + phase_s + k / fps + jitter(k),  jitter(k) ~ U(-jitter_s, +jitter_s)
    dropped(k)        = u(k) < drop_rate

Each slot draws from its own generator seeded with (seed, k), so any slot can be asked about in
any order and a scenario repeats exactly, which is what lets tests predict dropped and duplicated
counts.
"""

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FrameSchedule:
    """The nominal frame times of one virtual camera, with seeded jitter and drops."""

    fps: float  # frames per second
    epoch_s: float  # monotonic time of slot 0 before phase and jitter, seconds
    phase_s: float = 0.0  # offset of every slot, seconds
    jitter_s: float = 0.0  # half-width of the uniform jitter, seconds
    drop_rate: float = 0.0  # probability that a slot's frame is lost
    seed: int = 0

    @property
    def period_s(self) -> float:
        """Seconds between nominal frames."""
        return 1.0 / self.fps

    def _draws(self, slot: int) -> tuple[float, float]:
        jitter_u, drop_u = np.random.default_rng((self.seed, slot)).random(2)
        return float(jitter_u), float(drop_u)

    def capture_time_s(self, slot: int) -> float:
        """Monotonic capture time of slot `slot` (>= 0), seconds."""
        nominal_s = self.epoch_s + self.phase_s + slot / self.fps
        if self.jitter_s == 0:
            return nominal_s
        return nominal_s + (2.0 * self._draws(slot)[0] - 1.0) * self.jitter_s

    def is_dropped(self, slot: int) -> bool:
        """Whether slot `slot`'s frame is lost."""
        return self.drop_rate > 0 and self._draws(slot)[1] < self.drop_rate

    def first_slot_after(self, time_s: float) -> int:
        """The first slot whose nominal time is at or after `time_s` (never negative)."""
        return max(0, math.ceil((time_s - self.epoch_s - self.phase_s) * self.fps))
