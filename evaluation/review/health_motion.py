"""The health view's checks of the recorded motion: near-duplicate episodes, joint ranges, joints that never moved.

    near_duplicates  an episode whose state, resampled to 64 points, stays within 0.5 of an earlier one's
    joint_ranges     LeRobot's ±100 clamp, values no SO-101 reaches, non-finite values, and episodes
                     reaching far past the others (each column's range over the dataset as notes)
    joints_follow    a joint whose action moved and whose state did not: a dead motor or cable, a
                     follower that was never torqued, a column recorded from the wrong arm

Units are the dataset's: degrees (grippers % open) for ours, percent of range for some foreign ones.
"""

from __future__ import annotations

import bisect

import numpy as np

from evaluation.episode_source import DatasetSource
from evaluation.review.health_checks import CheckOutcome, EpisodeArrays, Finding, outcome_over_episodes
from robot.joints import GRIPPER

SUMMARY_POINTS = 64  # each episode's state resampled to this many points before comparing
DUPLICATE_MAX_DIFF = 0.5  # joint units: an episode closer than this to another at every point is a duplicate
DUPLICATE_LENGTH_RATIO = 0.05  # and their lengths differ by at most 5 %
CLAMP_VALUE = 100.0  # LeRobot's percent-of-range normalisation clamps body joints to exactly ±100
BODY_LIMIT_DEG = 200.0  # no SO-101 body joint turns further than this from its calibrated middle
GRIPPER_RANGE = (-5.0, 105.0)  # % open, with slack for calibration overshoot
OUTLIER_MARGIN = 30.0  # an episode past the others' 5th/95th percentile by this much is remarkable
OUTLIER_MIN_OTHERS = 3  # percentiles of fewer other episodes say nothing
FOLLOW_MIN_ACTION = 5.0  # joint units: an action that spans less asks too little to tell
FOLLOW_MIN_SHARE = 0.1  # a state spanning less than this share of its action's span did not follow


def _states(arrays: EpisodeArrays, min_frames: int) -> tuple[list[int], int]:
    """Indices of the episodes whose state is a 2-D array of the most common width, and that width."""
    shaped = {i: s.state for i, s in arrays.signals.items() if s.state.ndim == 2 and len(s.state) >= min_frames}
    if not shaped:
        return [], 0
    widths = [s.shape[1] for s in shaped.values()]
    width = max(set(widths), key=widths.count)
    return sorted(i for i, s in shaped.items() if s.shape[1] == width), width


def check_near_duplicates(source: DatasetSource, arrays: EpisodeArrays) -> CheckOutcome:
    """Episodes whose state stays within DUPLICATE_MAX_DIFF of an earlier episode's, at similar length.

    Each episode is compared with the earlier episodes that are not duplicates themselves (the first
    of each kind) and whose mean state lies within DUPLICATE_MAX_DIFF of its own (a duplicate's must:
    a mean moves no more than the largest difference). The list of them is kept sorted by that mean,
    so the comparisons stay few whether a dataset holds no duplicates or mostly duplicates.
    """
    usable, _ = _states(arrays, min_frames=2)
    if len(usable) < 2:
        return outcome_over_episodes(len(usable), [])
    summaries = np.stack([_resample(arrays.signals[i].state) for i in usable])  # (episodes, points, columns)
    lengths = np.array([len(arrays.signals[i].state) for i in usable], dtype=np.float64)
    keys = summaries.mean(axis=(1, 2))
    firsts: list[int] = []  # positions in `usable` of the first episode of each kind, sorted by key
    first_keys: list[float] = []
    findings = []
    for later in range(len(usable)):
        if not np.isfinite(keys[later]):
            continue  # NaN compares False: never a duplicate, never an original
        lo = bisect.bisect_left(first_keys, keys[later] - DUPLICATE_MAX_DIFF)
        hi = bisect.bisect_right(first_keys, keys[later] + DUPLICATE_MAX_DIFF)
        candidates = np.array(firsts[lo:hi], dtype=np.int64)
        if candidates.size:
            diff = np.abs(summaries[candidates] - summaries[later]).reshape(len(candidates), -1).max(axis=1)
            similar_length = np.abs(lengths[candidates] - lengths[later]) <= DUPLICATE_LENGTH_RATIO * lengths[later]
            close = np.flatnonzero((diff < DUPLICATE_MAX_DIFF) & similar_length)
            if close.size:
                best = close[np.argmin(diff[close])]
                nearest = int(candidates[best])
                detail = (
                    f"episode {usable[later]} nearly duplicates episode {usable[nearest]}: state within "
                    f"{diff[best]:.2f} at each of {SUMMARY_POINTS} points, {lengths[later]:.0f} and "
                    f"{lengths[nearest]:.0f} frames"
                )
                findings.append(Finding("near_duplicates", "warning", usable[later], detail))
                continue
        at = bisect.bisect_right(first_keys, keys[later])
        first_keys.insert(at, float(keys[later]))
        firsts.insert(at, later)
    return outcome_over_episodes(len(usable), findings)


def _resample(state: np.ndarray) -> np.ndarray:
    """(length, n) -> (SUMMARY_POINTS, n), linearly interpolated in frame index."""
    at = np.linspace(0.0, len(state) - 1, SUMMARY_POINTS)
    lo = np.floor(at).astype(np.int64)
    hi = np.minimum(lo + 1, len(state) - 1)
    w = (at - lo)[:, None]
    return state[lo].astype(np.float64) * (1.0 - w) + state[hi].astype(np.float64) * w


def check_joint_ranges(source: DatasetSource, arrays: EpisodeArrays) -> CheckOutcome:
    """Clamped, implausible or non-finite joint values per episode; episodes far outside the others' ranges."""
    usable, width = _states(arrays, min_frames=1)
    if not usable:
        return outcome_over_episodes(0, [])
    names = source.names if len(source.names) == width else tuple(f"column {k}" for k in range(width))
    gripper = np.array([GRIPPER in n.lower() for n in names])
    findings: list[Finding] = []
    for i in usable:
        findings += _episode_values(i, arrays.signals[i].state, names, gripper)
    # fmin/fmax skip NaN without a warning (those frames have their own finding above).
    mins = np.stack([np.fmin.reduce(arrays.signals[i].state, axis=0) for i in usable]).astype(np.float64)
    maxs = np.stack([np.fmax.reduce(arrays.signals[i].state, axis=0) for i in usable]).astype(np.float64)
    if len(usable) > OUTLIER_MIN_OTHERS:
        findings += _outliers(usable, mins, maxs, names)
    lows, highs = np.fmin.reduce(mins, axis=0), np.fmax.reduce(maxs, axis=0)
    notes = tuple(f"{n}: {lo:.1f} … {hi:.1f}" for n, lo, hi in zip(names, lows, highs, strict=True))
    return outcome_over_episodes(len(usable), findings, notes)


def _episode_values(index: int, state: np.ndarray, names: tuple[str, ...], gripper: np.ndarray) -> list[Finding]:
    findings = []
    finite = np.isfinite(state)
    if not finite.all():
        columns = ", ".join(names[k] for k in np.flatnonzero(~finite.all(axis=0)))
        detail = f"episode {index}: {int((~finite).any(axis=1).sum())} frames with NaN or infinite values in {columns}"
        findings.append(Finding("joint_ranges", "error", index, detail))
    clamped = (np.abs(state) == CLAMP_VALUE) & ~gripper
    if clamped.any():
        columns = ", ".join(names[k] for k in np.flatnonzero(clamped.any(axis=0)))
        detail = (
            f"episode {index}: {int(clamped.any(axis=1).sum())} frames at exactly ±100.000 on {columns} "
            "(LeRobot's percent-of-range clamp: the joint was at or past its calibrated limit)"
        )
        findings.append(Finding("joint_ranges", "warning", index, detail))
    low, high = GRIPPER_RANGE
    implausible = np.where(gripper, (state < low) | (state > high), np.abs(state) > BODY_LIMIT_DEG)
    if implausible.any():
        column = int(np.argmax(implausible.sum(axis=0)))
        values = state[:, column][implausible[:, column]]
        detail = (
            f"episode {index}: {int(implausible.any(axis=1).sum())} frames outside what an SO-101 reaches, e.g. "
            f"{names[column]} at {values[np.argmax(np.abs(values))]:.1f} (body joints within ±{BODY_LIMIT_DEG:g}°, "
            f"grippers {low:g}..{high:g} %): are these degrees?"
        )
        findings.append(Finding("joint_ranges", "warning", index, detail))
    return findings


def _outliers(usable: list[int], mins: np.ndarray, maxs: np.ndarray, names: tuple[str, ...]) -> list[Finding]:
    findings = []
    for k, index in enumerate(usable):
        others = np.delete(np.arange(len(usable)), k)
        above = maxs[k] - np.percentile(maxs[others], 95, axis=0)
        below = np.percentile(mins[others], 5, axis=0) - mins[k]
        beyond = np.fmax(above, below)
        if not np.fmax.reduce(beyond) > OUTLIER_MARGIN:  # NaN (a column of NaN) is not beyond
            continue
        column = int(np.nanargmax(beyond))
        side = "above the others' 95th" if above[column] >= below[column] else "below the others' 5th"
        detail = (
            f"episode {index}: {names[column]} reaches {beyond[column]:.0f} {side} percentile "
            f"(its range {mins[k, column]:.1f} … {maxs[k, column]:.1f})"
        )
        findings.append(Finding("joint_ranges", "info", index, detail))
    return findings


def check_joints_follow(source: DatasetSource, arrays: EpisodeArrays) -> CheckOutcome:
    """Per episode, each joint whose action spans FOLLOW_MIN_ACTION or more while its state spans under a tenth of it.

    Found in a public SO-101 recording (alanyukeroo/TECHIN-517-writeup: wrist_roll's state moved 6 of
    the 72 degrees its action asked, in every episode): a policy trained on it learns that the joint
    never moves, and nothing else in the data says so.
    """
    usable, width = _states(arrays, min_frames=2)
    names = source.names if len(source.names) == width else tuple(f"column {k}" for k in range(width))
    findings = []
    for i in usable:
        signals = arrays.signals[i]
        if signals.action.shape != signals.state.shape:
            continue  # the signals check names it
        asked = np.ptp(signals.action.astype(np.float64), axis=0)
        moved = np.ptp(signals.state.astype(np.float64), axis=0)
        for k in np.flatnonzero((asked >= FOLLOW_MIN_ACTION) & (moved < FOLLOW_MIN_SHARE * asked)):
            findings.append(
                Finding(
                    "joints_follow",
                    "warning",
                    i,
                    f"{names[k]}: its state moved {moved[k]:.1f} while its action asked {asked[k]:.1f}; the joint did"
                    " not follow (a dead motor or cable, torque off, or another arm's column)",
                )
            )
    return outcome_over_episodes(len(usable), findings)
