"""Actions planned for future ticks, and how a newly arrived chunk replaces them.

A chunk computed from the observation of tick t0 holds the actions for ticks t0, t0 + 1, ...
(LeRobot's server numbers them that way). When it arrives, ticks up to the last one served are
already past: those actions are dropped. The rest replace the queue (like LeRobot's robot client,
actions of the old plan beyond the new chunk are dropped too: never an older plan after a newer one).
Where the old queue and the new chunk both have an action for the same tick (the overlap, m ticks),
`Overlap.CROSSFADE` blends them linearly so the arm does not jump at the chunk boundary:

    k-th overlapping tick (k = 0 .. m-1):  (1 - w_k) * old + w_k * new,   w_k = (k + 1) / (m + 1)
    after the overlap:                      new

`Overlap.REPLACE` takes the new chunk as it is (LeRobot's `latest_only`). Not thread-safe: the
engine guards it with its lock.
"""

from dataclasses import dataclass

import numpy as np

from policies.engines.blend import BlendMode, crossfade_weights


@dataclass(frozen=True)
class PlannedAction:
    """One action due at a tick."""

    values: np.ndarray  # float32 (12,), BIMANUAL_KEYS order
    chunk_id: int  # the chunk it came from (for a blended action: the new chunk)
    index_in_chunk: int  # its position in that chunk
    chunk_latency_s: float  # round trip of that chunk: observation sent to actions received


class TickQueue:
    """Planned actions keyed by tick index, served in tick order."""

    def __init__(self, blend: BlendMode = BlendMode.CROSSFADE) -> None:
        self.blend = blend
        self._planned: dict[int, PlannedAction] = {}
        self.last_served = -1  # the last tick an action was asked for

    def __len__(self) -> int:
        return len(self._planned)

    def clear(self) -> None:
        """Drop every planned action and forget the ticks served."""
        self._planned.clear()
        self.last_served = -1

    def take(self, tick_index: int) -> PlannedAction | None:
        """The action for `tick_index`, or None; actions for earlier ticks are dropped."""
        self.last_served = max(self.last_served, tick_index)
        for past in [t for t in self._planned if t < tick_index]:
            del self._planned[past]
        return self._planned.pop(tick_index, None)

    def merge(self, first_tick: int, actions: np.ndarray, chunk_id: int, latency_s: float) -> int:
        """Put a chunk whose first action is for `first_tick` in place of the queue; returns actions kept."""
        start = max(first_tick, self.last_served + 1)
        ticks = range(start, first_tick + len(actions))
        overlapping = {tick: k for k, tick in enumerate(t for t in ticks if t in self._planned)}
        weights = crossfade_weights(len(overlapping)) if self.blend is BlendMode.CROSSFADE else None
        planned: dict[int, PlannedAction] = {}
        for tick in ticks:
            index = tick - first_tick
            values = np.asarray(actions[index], dtype=np.float32)
            if weights is not None and tick in overlapping:
                weight = weights[overlapping[tick]]
                values = ((1 - weight) * self._planned[tick].values + weight * values).astype(np.float32)
            planned[tick] = PlannedAction(values, chunk_id, index, latency_s)
        self._planned = planned
        return len(planned)
