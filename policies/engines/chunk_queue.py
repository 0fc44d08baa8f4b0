"""The actions waiting to be executed, each tagged with the chunk it came from; chunk validation.

    chunk (n, 12) ──validate_chunk──> ChunkQueue.merge(chunk, skip, blend) ──pop()──> QueuedAction
                                            │                                            │
                                            └── consumed: actions popped so far ─────────┘

Alignment is by actions executed, as in LeRobot's RTC `ActionQueue` (`last_index` before and after
inference): a chunk computed from the observation taken when `consumed` was c0 arrives when it is
c1; its first c1 - c0 actions are for ticks the robot has already executed, so they are skipped.
A starved tick executes nothing (the arm holds still), so it moves nothing into the past: after a
hold, the new chunk starts where the arm really is in its plan. A loop overrun (skipped deadlines)
likewise executes the next action late instead of jumping ahead. Used by one thread only.
"""

from collections import deque
from dataclasses import dataclass

import numpy as np

from policies.engines.blend import BlendMode, blend_overlap
from policies.errors import InferenceError, NonFiniteActionError
from robot.joints import BIMANUAL_KEYS

ACTION_SIZE = len(BIMANUAL_KEYS)


@dataclass(frozen=True)
class QueuedAction:
    """One action waiting for its tick."""

    values: np.ndarray  # float32 (12,), BIMANUAL_KEYS order
    chunk_id: int  # the chunk it belongs to
    index_in_chunk: int  # its position in that chunk
    chunk_latency_s: float  # how long that chunk took to compute, seconds


def validate_chunk(chunk: np.ndarray, chunk_id: int) -> np.ndarray:
    """`chunk` as float32 (n, 12), or an error naming what is wrong; NaN/inf raise NonFiniteActionError."""
    array = np.asarray(chunk, dtype=np.float32)
    if array.ndim != 2 or array.shape[0] < 1 or array.shape[1] != ACTION_SIZE:
        raise InferenceError(
            f"chunk {chunk_id} has shape {tuple(array.shape)}; expected (n, {ACTION_SIZE}) actions in "
            "BIMANUAL_KEYS order. Check the checkpoint's action features (so101-deploy checks the contract)."
        )
    bad = np.argwhere(~np.isfinite(array))
    if len(bad):
        index, joint = (int(v) for v in bad[0])
        raise NonFiniteActionError(
            f"chunk {chunk_id} has a non-finite value ({array[index, joint]}) at action {index}, "
            f"{BIMANUAL_KEYS[joint]} ({len(bad)} non-finite values in all): nothing of it was sent and the "
            "episode stops. Check the checkpoint (its normalisation stats, its training loss)."
        )
    return array


class ChunkQueue:
    """Queued actions of the current plan, consumed one per executed tick."""

    def __init__(self) -> None:
        self._items: deque[QueuedAction] = deque()
        self.consumed = 0  # actions popped since the queue was made or cleared

    def __len__(self) -> int:
        return len(self._items)

    def pop(self) -> QueuedAction | None:
        """The next action, or None when the queue is empty."""
        if not self._items:
            return None
        self.consumed += 1
        return self._items.popleft()

    def remaining(self) -> np.ndarray:
        """The queued actions' values, float32 (r, 12) (r may be 0)."""
        if not self._items:
            return np.zeros((0, ACTION_SIZE), dtype=np.float32)
        return np.stack([item.values for item in self._items])

    def merge(
        self,
        chunk: np.ndarray,
        *,
        chunk_id: int,
        latency_s: float,
        skip: int,
        blend: BlendMode = BlendMode.CROSSFADE,
        blend_steps: int | None = None,
    ) -> int:
        """Queue `chunk[skip:]`, its first ticks blended with what was queued; returns how many are queued."""
        skip = max(0, min(skip, len(chunk)))
        merged = blend_overlap(self.remaining(), chunk[skip:], blend, blend_steps)
        self._items = deque(QueuedAction(merged[j], chunk_id, skip + j, latency_s) for j in range(len(merged)))
        return len(self._items)

    def extend(self, chunk: np.ndarray, *, chunk_id: int, latency_s: float) -> None:
        """Append a whole chunk after what is queued (LeRobot's select_action queue)."""
        self._items.extend(QueuedAction(chunk[i], chunk_id, i, latency_s) for i in range(len(chunk)))

    def clear(self) -> None:
        """Drop every queued action and restart the count."""
        self._items.clear()
        self.consumed = 0
