"""The health view's checks that state and action belong together: in time, and arm by arm.

    action_lag   observation.state answers action as a follower does: not before the next frame,
                 and within MAX_LAG_S on average. Otherwise the actions were shifted against the
                 observations (a conversion script's off-by-a-few).
    state_sides  each arm's state block follows that arm's actions far better than the other arm's.
                 Otherwise observation.state's left_* and right_* blocks were swapped.

Both read the rig's own log first (rig_log.py): for our recordings it says exactly how the data
was shifted or swapped. A dataset without that log (or one it no longer describes) is judged from
its signals: the follower's response kernel (follower_response.py), and how far each state block
stays from each arm's actions at its best lag. Episodes whose body joints barely move say nothing.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import numpy as np

from evaluation.episode_source import DatasetSource, EpisodeSignals
from evaluation.review.follower_response import MIN_TRAVEL, Response, follower_response
from evaluation.review.health_checks import CheckOutcome, EpisodeArrays, Finding, outcome_over_episodes
from evaluation.review.rig_log import LogComparison, compare_with_log
from robot.joints import BODY_JOINTS, GRIPPER, Side

MAX_SHIFT_FRAMES = 8  # shifts looked for in the rig's log, and lags tried for the side check, each way
# The state answers its action a frame later at the earliest. Virtual-rig recordings (fitted servo
# model; 5 episodes of the fold task and of the mirrored fold) keep 0.05-0.14 of the response kernel
# at lags <= 0 (a linear kernel only approximates the servo's saturating loop); the same recordings
# with action[t] := action[t-3] keep 0.34-0.43 there, the synthetic test data 0.88.
MAX_EARLY_SHARE = 0.25
# The slowest follower: the kernel's centroid is 4.3-4.6 frames (144-153 ms at 30 fps) on those
# recordings, 7.3-7.5 frames (242-251 ms) with action[t] := action[t+3]: 200 ms splits the margin.
MAX_LAG_S = 0.2
MIN_FIT = 0.5  # a kernel explaining less of the state's velocity is not trusted (the state follows no action)
# Side swap, judged from the signals: each state block must sit at least this much closer (mean
# absolute difference at the best lag, joint units) to the other arm's actions than to its own, and
# within SIDE_RATIO of it. Clean recordings measure 0.4-0.6 own against 6.7-30 crossed (the mirrored
# fold least apart: its arms differ only in pan and roll); swapped copies the reverse.
SIDE_MIN_GAP = 3.0
SIDE_RATIO = 0.5


def body_columns(signals: EpisodeSignals, side: Side | None = None) -> list[int]:
    """Columns of body joints (no gripper): one arm's in BODY_JOINTS order, or every non-gripper column."""
    arms = signals.arms or {}
    if side is not None:
        return [signals.joint_column(side, joint) for joint in BODY_JOINTS]
    if arms:
        return [signals.joint_column(s, joint) for s in arms for joint in BODY_JOINTS]
    return [i for i, name in enumerate(signals.names) if GRIPPER not in name.lower()]


def check_action_lag(source: DatasetSource, arrays: EpisodeArrays) -> CheckOutcome:
    """Per episode: does observation.state answer action as a follower does, neither too early nor too late?"""
    max_lag_frames = MAX_LAG_S * source.fps
    findings: list[Finding] = []
    delays: list[float] = []
    checked = logged = 0
    for index, signals in sorted(arrays.signals.items()):
        log = compare_with_log(source.root, index, signals, MAX_SHIFT_FRAMES)
        if log is not None and log.relative_shift is not None:
            checked, logged = checked + 1, logged + 1
            if log.relative_shift != 0:
                findings.append(Finding("action_lag", "error", index, _logged_shift(source, index, log)))
            continue
        columns = body_columns(signals)
        response = follower_response(signals.state[:, columns], signals.action[:, columns], source.fps)
        if response is None or response.fit < MIN_FIT:
            continue  # too little motion, or a state that does not follow its action: no timing to judge
        checked += 1
        delays.append(response.delay_frames)
        if response.early_share > MAX_EARLY_SHARE or response.delay_frames > max_lag_frames:
            findings.append(Finding("action_lag", "error", index, _measured_shift(source, index, response)))
    notes = [f"{logged} episodes compared frame by frame with the rig's own log"] if logged else []
    if delays:
        ms = 1000.0 / source.fps
        low, middle, high = np.percentile(delays, [0, 50, 100])
        notes.append(
            f"state trails action by {middle:.1f} frames ({middle * ms:.0f} ms) in the median episode "
            f"({low:.1f}..{high:.1f}), from the signals of {len(delays)} episodes; allowed: at most "
            f"{MAX_EARLY_SHARE:.0%} of the response at lags <= 0, a mean delay up to {max_lag_frames:.1f} frames"
        )
    return outcome_over_episodes(checked, findings, notes)


def _logged_shift(source: DatasetSource, index: int, log: LogComparison) -> str:
    shift = log.relative_shift or 0
    where = log.path.relative_to(source.root) if log.path.is_relative_to(source.root) else log.path
    direction = f"ahead of observation.state by {shift}" if shift > 0 else f"behind observation.state by {-shift}"
    return (
        f"episode {index}: action is {direction} frame{'s' if abs(shift) != 1 else ''} (action[t] holds what "
        f"the rig sent at frame t{shift:+d}, by its own log {where}); a policy trained on it learns mistimed "
        f"actions: redo the conversion that wrote data/ without the shift, then run {check_again(source.root)}"
    )


def _measured_shift(source: DatasetSource, index: int, response: Response) -> str:
    ms = 1000.0 / source.fps
    delay = f"{response.delay_frames:.1f} frames ({response.delay_frames * ms:.0f} ms)"
    if response.early_share > MAX_EARLY_SHARE:
        what = (
            f"{response.early_share:.0%} of observation.state's response comes with or before its action "
            f"(a follower answers a frame later at the earliest; mean delay {delay}): action looks late against "
            f"the state"
        )
    else:
        what = (
            f"observation.state trails action by {delay} on average, past the {MAX_LAG_S * 1000:.0f} ms a follower "
            f"needs: action looks early against the state"
        )
    return (
        f"episode {index}: {what}; actions shifted against the observations: check the conversion that wrote "
        f"data/, then run {check_again(source.root)}"
    )


def side_distances(signals: EpisodeSignals, max_lag: int = MAX_SHIFT_FRAMES) -> dict[tuple[Side, Side], float]:
    """(state side, action side) -> mean absolute difference of their body joints at the best lag (joint units).

    The best lag of each pairing within ±max_lag, so shifted actions do not hide swapped sides.
    """
    out: dict[tuple[Side, Side], float] = {}
    for state_side in Side:
        state = np.asarray(signals.state[:, body_columns(signals, state_side)], dtype=np.float64)
        for action_side in Side:
            action = np.asarray(signals.action[:, body_columns(signals, action_side)], dtype=np.float64)
            errors = [
                np.mean(np.abs(followed - commanded))
                for followed, commanded in (_paired(state, action, lag) for lag in range(-max_lag, max_lag + 1))
                if len(commanded)
            ]
            out[state_side, action_side] = float(np.min(errors)) if errors else float("nan")
    return out


def _paired(state: np.ndarray, action: np.ndarray, lag: int) -> tuple[np.ndarray, np.ndarray]:
    """(state[t + lag], action[t]) over every t where both exist."""
    frames = len(action)
    return state[max(0, lag) : frames - max(0, -lag)], action[max(0, -lag) : frames - max(0, lag)]


def sides_swapped(distances: dict[tuple[Side, Side], float]) -> bool:
    """Whether each state block sits clearly closer to the other arm's actions than to its own."""
    for side, other in ((Side.LEFT, Side.RIGHT), (Side.RIGHT, Side.LEFT)):
        own, cross = distances[side, side], distances[side, other]
        if not (own - cross >= SIDE_MIN_GAP and cross <= SIDE_RATIO * own):  # NaN compares False: not swapped
            return False
    return True


def check_state_sides(source: DatasetSource, arrays: EpisodeArrays) -> CheckOutcome:
    """Per episode of a two-arm dataset: does each arm's state block follow its own arm's actions?"""
    if set(source.arms) != set(Side):
        why = "did not run: the dataset does not hold two SO-101 arms (left_* and right_* joints)"
        return CheckOutcome(0, 0, (Finding("state_sides", "info", None, why),))
    findings: list[Finding] = []
    checked = 0
    for index, signals in sorted(arrays.signals.items()):
        log = compare_with_log(source.root, index, signals, MAX_SHIFT_FRAMES)
        if log is not None and (log.state_shift is not None or log.sides_swapped):
            checked += 1
            if log.sides_swapped:
                where = log.path.relative_to(source.root) if log.path.is_relative_to(source.root) else log.path
                evidence = f"its left_* columns hold what the rig logged for the right arm and vice versa ({where})"
                findings.append(Finding("state_sides", "error", index, _swapped(source, index, evidence)))
            continue
        columns = body_columns(signals)
        if np.all(np.ptp(signals.action[:, columns], axis=0) < MIN_TRAVEL):
            continue  # arms at rest: any pairing fits
        checked += 1
        distances = side_distances(signals)
        if sides_swapped(distances):
            evidence = (
                f"left_* is {distances[Side.LEFT, Side.RIGHT]:.1f} from the right arm's actions and "
                f"{distances[Side.LEFT, Side.LEFT]:.1f} from its own, right_* {distances[Side.RIGHT, Side.LEFT]:.1f} "
                f"from the left's and {distances[Side.RIGHT, Side.RIGHT]:.1f} from its own"
            )
            findings.append(Finding("state_sides", "error", index, _swapped(source, index, evidence)))
    return outcome_over_episodes(checked, findings)


def _swapped(source: DatasetSource, index: int, evidence: str) -> str:
    return (
        f"episode {index}: observation.state's left and right arm blocks are swapped against action: {evidence}; "
        f"swap them back in the script that wrote data/, recompute meta/stats.json, then run "
        f"{check_again(source.root)}"
    )


def check_again(root: Path) -> str:
    """The command that runs these checks again on a dataset (a finding's next step)."""
    return shlex.join(["so101-review", f"--dataset.root={root}", "--check=true"])
