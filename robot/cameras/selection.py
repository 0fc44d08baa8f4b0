"""Which frame of each camera goes with a control tick: nearest, latest, or the least-skewed set.

Pure functions over ring snapshots (frames oldest first). Facts that decide between them, for
free-running cameras at the same rate with random phases (see benchmarks/camera_skew.py):

- LATEST (LeRobot's `read_latest`): each frame is 0..1 period older than the tick; spread between
  cameras up to one period (p50 about half a period).
- NEAREST: each frame within half a period of the tick (so images line up with the joint state
  read at the tick), but the spread between cameras is distributed as for LATEST: phases decide it.
- MIN_SKEW: the set with the smallest spread near the tick: one period minus the largest gap
  between the cameras' phases (at most two thirds of a period for three cameras), plus jitter;
  frames up to about one period from the tick.
"""

import bisect
from collections.abc import Mapping, Sequence
from enum import StrEnum

from robot.cameras.frame import Frame


class SelectionStrategy(StrEnum):
    """How the sync reader matches frames to a tick."""

    NEAREST = "nearest"  # each camera's frame nearest the tick (waits up to about half a period)
    LATEST = "latest"  # each camera's newest frame (never waits; LeRobot's behaviour)
    MIN_SKEW = "min_skew"  # the set with the smallest capture-time spread near the tick


def nearest_frame(frames: Sequence[Frame], time_s: float) -> Frame:
    """The frame captured nearest `time_s` (the earlier one on a tie); `frames` non-empty, oldest first."""
    times = [frame.capture_time_s for frame in frames]
    i = bisect.bisect_left(times, time_s)
    if i == 0:
        return frames[0]
    if i == len(frames):
        return frames[-1]
    before, after = frames[i - 1], frames[i]
    return after if after.capture_time_s - time_s < time_s - before.capture_time_s else before


def _with_sequence(frames: Sequence[Frame], sequence: int) -> Frame | None:
    return next((frame for frame in reversed(frames) if frame.sequence == sequence), None)


def select_nearest(
    rings: Mapping[str, Sequence[Frame]],
    time_s: float,
    expected: Mapping[str, int] | None = None,
    max_offset_s: Mapping[str, float] | None = None,
) -> dict[str, Frame]:
    """Each camera's frame nearest `time_s`, preferring the one that continues its sequence.

    With `expected` (camera -> the sequence number that continues the previous tick's choice)
    and `max_offset_s` (camera -> seconds, normally half a period plus a margin), that frame is
    kept over the nearest one while it is within `max_offset_s` of `time_s`: otherwise jitter
    around the half-period boundary flips choices into duplicate-then-drop pairs.
    """
    chosen = {name: nearest_frame(frames, time_s) for name, frames in rings.items()}
    if expected is None or max_offset_s is None:
        return chosen
    for name, frame in chosen.items():
        sequence = expected.get(name)
        if sequence is None or frame.sequence == sequence:
            continue
        successor = _with_sequence(rings[name], sequence)
        if successor is not None and abs(successor.capture_time_s - time_s) <= max_offset_s[name]:
            chosen[name] = successor
    return chosen


def select_latest(rings: Mapping[str, Sequence[Frame]], time_s: float) -> dict[str, Frame]:
    """Each camera's newest frame; `time_s` is unused (kept for a common signature)."""
    return {name: frames[-1] for name, frames in rings.items()}


def _spread_s(frames: Sequence[Frame]) -> float:
    times = [frame.capture_time_s for frame in frames]
    return max(times) - min(times)


def _distance_s(frames: Sequence[Frame], time_s: float) -> float:
    return abs(sum(frame.capture_time_s for frame in frames) / len(frames) - time_s)


def select_min_skew(
    rings: Mapping[str, Sequence[Frame]],
    time_s: float,
    window_s: float,
    expected: Mapping[str, int] | None = None,
    margin_s: float = 0.0,
) -> dict[str, Frame]:
    """The set (one frame per camera, each within `window_s` of `time_s`) with the least spread.

    Sets whose spread is within `margin_s` of the least count as equally good; among them the
    one made of every camera's `expected` sequence number (continuing the previous tick) wins,
    else the one nearest `time_s` (sets a period apart have the same spread up to jitter, and
    must not alternate). Falls back to
    `select_nearest` when a camera has no frame in the window.
    """
    candidates = {
        name: [frame for frame in frames if abs(frame.capture_time_s - time_s) <= window_s]
        for name, frames in rings.items()
    }
    if any(not frames for frames in candidates.values()):
        return select_nearest(rings, time_s)
    sets: list[dict[str, Frame]] = []
    for name, frames in candidates.items():
        for anchor in frames:  # the set's newest frame; every other camera's newest not after it
            chosen = {name: anchor}
            for other, other_frames in candidates.items():
                if other != name:
                    anchor_s = anchor.capture_time_s
                    earlier = [frame for frame in other_frames if frame.capture_time_s <= anchor_s]
                    if not earlier:
                        break
                    chosen[other] = earlier[-1]
            else:
                sets.append(chosen)
    if not sets:
        return select_nearest(rings, time_s)
    least_s = min(_spread_s(list(chosen.values())) for chosen in sets)
    good = [chosen for chosen in sets if _spread_s(list(chosen.values())) <= least_s + margin_s]
    if expected is not None and set(expected) == set(rings):
        for chosen in good:
            if all(chosen[name].sequence == expected[name] for name in rings):
                return {name: chosen[name] for name in rings}
    best = min(good, key=lambda chosen: _distance_s(list(chosen.values()), time_s))
    return {name: best[name] for name in rings}
