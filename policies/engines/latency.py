"""Chunk latencies: percentiles over an engine's life, and the recent worst case for planning.

Planning uses the maximum of the last few chunks (like LeRobot's RTC `LatencyTracker.max()`): a
refill threshold or an inference delay sized for the typical chunk starves on the slow one.
"""

import math
from collections import deque

import numpy as np


class LatencyLog:
    """Chunk latencies in seconds. Written by one thread, read by any (reads copy under the GIL)."""

    def __init__(self, recent: int = 10, expected_s: float | None = None) -> None:
        self._all: list[float] = []
        self._recent: deque[float] = deque(maxlen=recent)
        self.expected_s = expected_s  # the estimate before any chunk was timed (a warm-up or the config)

    def add(self, latency_s: float) -> None:
        """Record one chunk's latency (negative or non-finite values are ignored)."""
        if math.isfinite(latency_s) and latency_s >= 0:
            self._all.append(latency_s)
            self._recent.append(latency_s)

    def __len__(self) -> int:
        return len(self._all)

    def estimate_s(self) -> float | None:
        """What the next chunk may take: the recent maximum, else the expected latency, else None."""
        return max(self._recent) if self._recent else self.expected_s

    def percentile_s(self, q: float) -> float | None:
        """The q-th percentile (0..100) over every chunk so far, or None before the first."""
        values = list(self._all)
        return float(np.percentile(values, q)) if values else None
