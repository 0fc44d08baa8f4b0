"""A writer that never drops a frame for want of a ring slot: the control side queues it instead.

The dataset writer's shared-memory ring holds a few seconds of frames (`WriterSpec.ring_s`); a frame
offered while it is full is refused and counted. A highlight hands the writer seconds of remembered
frames at once, faster than any encoder takes them, so its writer queues what the ring cannot take
(frames hold references to their arrays, no copies) and moves them into the ring as slots free up,
at every later frame and, finally, in the save (a background thread), which waits until all of them
are in before the writer process saves. The queue is bounded (`max_frames`): past it, frames are
refused and counted as before.
"""

import time
from collections import deque
from collections.abc import Mapping
from typing import Any

import numpy as np

from teleop.dataset.writer_process import DatasetWriter

_WAIT_S = 0.005  # between looks for a free slot while a save empties the queue


class SpillingWriter:
    """A `DatasetWriter` with a queue in front of its ring (the `EpisodeWriter` the session uses)."""

    def __init__(self, writer: DatasetWriter, max_frames: int) -> None:
        self.writer = writer
        self.max_frames = max_frames
        self._queue: deque[tuple[np.ndarray, np.ndarray, Mapping[str, np.ndarray], Mapping[str, float]]] = deque()
        self.spilled = 0  # frames of this episode that waited in the queue
        self.refused = 0  # frames of this episode refused (the queue was full)

    def begin_episode(self, task: str) -> int:
        """Start an episode (see `DatasetWriter.begin_episode`)."""
        self._queue.clear()
        self.spilled = self.refused = 0
        return self.writer.begin_episode(task)

    def add_frame(
        self, state: np.ndarray, action: np.ndarray, images: Mapping[str, np.ndarray], timing: Mapping[str, float]
    ) -> bool:
        """Hand a frame to the ring, or queue it behind the frames already waiting; False when the queue is full."""
        self._move()
        if not self._queue and self._room() > 0:
            return self.writer.add_frame(state, action, images, timing)
        if len(self._queue) >= self.max_frames:
            self.refused += 1
            return False
        self._queue.append((state, action, images, timing))
        self.spilled += 1
        return True

    def save_episode(self, quality: dict) -> Any:
        """Move every queued frame into the ring (waiting for slots), then save (see `DatasetWriter.save_episode`)."""
        deadline = time.monotonic() + self.writer.spec.save_timeout_s
        while self._queue and time.monotonic() < deadline:
            if not self._move():
                time.sleep(_WAIT_S)
        self._queue.clear()  # (past the deadline: the save below reports the writer's state)
        return self.writer.save_episode(quality)

    def discard_episode(self) -> None:
        """Drop the episode in progress and its queue."""
        self._queue.clear()
        self.writer.discard_episode()

    @property
    def longest_save_s(self) -> float:
        """The queue's wait and the writer's own bound."""
        return self.writer.spec.save_timeout_s + self.writer.longest_save_s

    def _room(self) -> int:
        return self.writer.spec.ring_frames - self.writer.backlog

    def _move(self) -> bool:
        """Queued frames into free slots, oldest first; whether any moved."""
        moved = False
        while self._queue and self._room() > 0:
            if not self.writer.add_frame(*self._queue[0]):
                break
            self._queue.popleft()
            moved = True
        return moved

    def __getattr__(self, name: str) -> Any:
        return getattr(self.writer, name)  # open, close, report, backlog, pid: the writer's own
