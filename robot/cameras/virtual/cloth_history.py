"""What the cloth did since the table was last tidied: its points and who held them, step by step.

The scene appends one entry per cloth step (at most 50 a second). Memory stays bounded however long
the table goes untidied: when the log is full, every other entry is dropped and from then on only
every other step is kept, so the log always spans the whole time since the reset, at a coarser
rate the longer it runs (4,096 entries: 80 s at the full rate, 4 MB for a 9 x 9 cloth).
"""

from dataclasses import dataclass

import numpy as np

from robot.cameras.virtual.cloth import ClothPose
from robot.joints import Side

SIDES: tuple[Side, ...] = (Side.LEFT, Side.RIGHT)  # the order of `ClothHistory.held`'s columns
NOT_HELD = -1  # `held` where a gripper holds nothing
_CAPACITY = 4096


@dataclass(frozen=True, eq=False)
class ClothHistory:
    """The cloth from a reset to a moment: read-only arrays, one row per logged step."""

    pose: ClothPose  # where the cloth lay flat at the reset
    times_s: np.ndarray  # (T,) seconds since the reset
    points: np.ndarray  # (T, grid, grid, 3) point positions, metres, float32
    held: np.ndarray  # (T, 2) the point index each gripper holds (columns in SIDES order), NOT_HELD if none

    def __len__(self) -> int:
        return len(self.times_s)


class ClothLog:
    """Appends cloth steps; not thread-safe (the scene calls it under its lock)."""

    def __init__(self, pose: ClothPose, grid: int, capacity: int = _CAPACITY) -> None:
        self.pose = pose
        self._times = np.zeros(capacity)
        self._points = np.zeros((capacity, grid, grid, 3), dtype=np.float32)
        self._held = np.full((capacity, len(SIDES)), NOT_HELD, dtype=np.int32)
        self._count = 0
        self._stride = 1  # keep one step in this many
        self._seen = 0

    def append(self, time_s: float, points: np.ndarray, held: dict[Side, int]) -> None:
        """One cloth step, `time_s` seconds after the reset."""
        keep = self._seen % self._stride == 0
        self._seen += 1
        if not keep:
            return
        if self._count == len(self._times):
            self._halve()
        row = self._count
        self._times[row] = time_s
        self._points[row] = points
        self._held[row] = [held.get(side, NOT_HELD) for side in SIDES]
        self._count += 1

    def _halve(self) -> None:
        kept = self._count // 2
        for array in (self._times, self._points, self._held):
            array[:kept] = array[: 2 * kept : 2].copy()
        self._count = kept
        self._stride *= 2
        self._seen = 0  # the next kept step comes `stride` steps after the last kept one

    def history(self) -> ClothHistory:
        """A copy of everything logged so far."""
        count = self._count
        arrays = [self._times[:count].copy(), self._points[:count].copy(), self._held[:count].copy()]
        for array in arrays:
            array.flags.writeable = False
        return ClothHistory(self.pose, *arrays)
