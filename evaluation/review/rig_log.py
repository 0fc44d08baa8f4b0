"""What the rig's own per-frame log says about an episode's data: actions shifted, state sides swapped.

so101-record keeps, beside each episode, the joint states it read and the actions it sent, frame by
frame (`meta/so101/episodes/episode-NNNNNN/timing.parquet`, columns `state.<name>` and
`action.<name>`; teleop/dataset/sidecar.py). A script that rewrites `data/` (a conversion, a
careless edit) leaves that log alone, so comparing the two is exact: the data's action at frame t
either is the logged action at frame t, or at frame t+k for one shift k, or neither (the log
belongs to another episode: then the statistical checks in health_alignment.py decide).

    data/  observation.state, action ─┐
                                      ├─ compare_with_log ─> LogComparison (shifts, sides swapped)
    meta/so101/.../timing.parquet   ──┘   None: no log, or one of another length
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from evaluation.episode_source import EpisodeSignals
from robot.joints import Side
from teleop.dataset.sidecar import TIMING_FILE, episode_dir, read_timing


@dataclass(frozen=True)
class LogComparison:
    """How an episode's data lines up with the rig's log of it."""

    path: Path  # the log file compared with
    action_shift: int | None  # data action[t] == logged action[t + shift]; None: no shift within the limit fits
    state_shift: int | None  # data state[t] == logged state[t + shift]; None: none fits (or the sides are swapped)
    sides_swapped: bool  # data state's left block is the logged right arm's, and its right block the left's

    @property
    def relative_shift(self) -> int | None:
        """Frames the data's action is ahead of its state compared with what the rig did (0: aligned)."""
        if self.action_shift is None:
            return None
        state_shift = 0 if self.sides_swapped else self.state_shift
        return None if state_shift is None else self.action_shift - state_shift


def compare_with_log(root: Path, index: int, signals: EpisodeSignals, max_shift: int) -> LogComparison | None:
    """Compare one episode's state and action with the rig's log of them; None when there is no usable log.

    A log of another length, or without one of the data's columns, is no evidence (another tool
    recorded or cut the episode), and neither is one whose state and action both fit no shift.
    """
    path = episode_dir(root, index) / TIMING_FILE
    if not path.is_file():
        return None
    try:
        timing = read_timing(root, index)
    except (OSError, ValueError, pa.ArrowException):
        return None
    names = signals.names
    logged_state = _logged(timing, "state", names, len(signals.state))
    logged_action = _logged(timing, "action", names, len(signals.action))
    if logged_state is None or logged_action is None:
        return None
    state = np.asarray(signals.state, dtype=np.float32)
    action_shift = matching_shift(np.asarray(signals.action, dtype=np.float32), logged_action, max_shift)
    state_shift = matching_shift(state, logged_state, max_shift)
    swapped = False
    if state_shift is None and (order := _swapped_order(names, signals.arms or {})) is not None:
        swapped = matching_shift(state[:, order], logged_state, 0) == 0
    if action_shift is None and state_shift is None and not swapped:
        return None
    return LogComparison(path, action_shift, state_shift, swapped)


def matching_shift(data: np.ndarray, logged: np.ndarray, max_shift: int) -> int | None:
    """The shift k (smallest first) with data[t] == logged[t + k] on every frame both hold; None: none fits.

    Exact float32 equality: the log keeps the very values the dataset was given.
    """
    frames = len(data)
    for shift in sorted(range(-max_shift, max_shift + 1), key=lambda k: (abs(k), k)):
        if abs(shift) >= frames:
            continue
        ours = data[max(0, -shift) : frames - max(0, shift)]
        theirs = logged[max(0, shift) : frames - max(0, -shift)]
        if np.array_equal(ours, theirs):
            return shift
    return None


def _logged(timing: Mapping[str, np.ndarray], kind: str, names: tuple[str, ...], frames: int) -> np.ndarray | None:
    keys = [f"{kind}.{name}" for name in names]
    if any(key not in timing for key in keys) or len(timing[keys[0]]) != frames:
        return None
    return np.column_stack([np.asarray(timing[key], dtype=np.float32) for key in keys])


def _swapped_order(names: tuple[str, ...], arms: Mapping[Side, str]) -> np.ndarray | None:
    """Column order that exchanges the two arms' blocks (None: not a bimanual dataset)."""
    if set(arms) != set(Side) or not all(arms.values()):
        return None
    left, right = arms[Side.LEFT], arms[Side.RIGHT]
    order = []
    for name in names:
        if name.startswith(left):
            other = right + name.removeprefix(left)
        elif name.startswith(right):
            other = left + name.removeprefix(right)
        else:
            other = name
        if other not in names:
            return None
        order.append(names.index(other))
    return np.array(order)
