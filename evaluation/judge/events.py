"""Find the moments of an episode from its recorded state and action.

    state/action (N x 6 per arm) --> gripper close/open per arm (hysteresis on the gripper command)
                          --> arm motion segments (smoothed joint speed above a threshold)
                          --> events: start, grasp, lift, release, motion onset/end, push, final

The events place keyframes (frame_selection) and feed the heuristic motion check (motion_check).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evaluation.config_checks import reject_non_finite
from evaluation.episode_source import EpisodeSignals
from evaluation.errors import ConfigError
from evaluation.vocabulary import Phase
from robot.joints import BODY_JOINTS, GRIPPER, Side

LATERAL_JOINT = "shoulder_pan"  # the joint that swings an arm sideways (pushing the cloth aside)


@dataclass(frozen=True)
class EventConfig:
    """Thresholds for finding events in the recorded signals."""

    gripper_source: str = "action"  # "action" (commanded, what the policy meant) or "state" (measured)
    gripper_closed_below_pct: float = 30.0  # a gripper below this is closed, percent open
    gripper_open_above_pct: float = 50.0  # a closed gripper above this is open again (hysteresis), percent open
    motion_speed_deg_s: float = 8.0  # an arm moves while a body joint is faster than this, deg/s
    smoothing_s: float = 0.2  # moving-average window applied to joint speeds, seconds
    min_motion_s: float = 0.3  # motion shorter than this is ignored, seconds

    def __post_init__(self) -> None:
        """Validate the thresholds."""
        reject_non_finite(self, "events")
        if self.gripper_source not in ("action", "state"):
            raise ConfigError(f"events.gripper_source={self.gripper_source!r}; allowed: 'action', 'state'")
        if not 0 <= self.gripper_closed_below_pct < self.gripper_open_above_pct <= 100:
            raise ConfigError(
                "events.gripper_closed_below_pct must be below events.gripper_open_above_pct, both in 0..100; "
                f"got {self.gripper_closed_below_pct} and {self.gripper_open_above_pct}"
            )
        for name in ("motion_speed_deg_s", "smoothing_s", "min_motion_s"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"events.{name}={getattr(self, name)} must be > 0")


@dataclass(frozen=True)
class Event:
    """A moment of the episode."""

    phase: Phase  # what happens
    frame_index: int  # frame within the episode
    side: Side | None = None  # the arm involved, when one is


@dataclass(frozen=True)
class MotionSegment:
    """An interval during which an arm moves."""

    side: Side  # which arm
    start: int  # first moving frame
    end: int  # last moving frame


@dataclass(frozen=True)
class EpisodeEvents:
    """Events and motion of one episode."""

    length: int  # frames in the episode
    fps: int  # frames per second
    events: tuple[Event, ...]  # sorted by frame
    motion: tuple[MotionSegment, ...]  # sorted by start
    closed_intervals: tuple[tuple[Side, int, int], ...]  # (side, grasp frame, release frame or last frame)

    def of(self, phase: Phase) -> tuple[Event, ...]:
        """Events of one phase."""
        return tuple(e for e in self.events if e.phase == phase)


def find_events(signals: EpisodeSignals, config: EventConfig) -> EpisodeEvents:
    """Find gripper, motion, lift and push events in an episode."""
    n = signals.state.shape[0]
    last = n - 1
    events: list[Event] = [Event(Phase.START, 0), Event(Phase.FINAL, last)]
    motion: list[MotionSegment] = []
    closed: list[tuple[Side, int, int]] = []
    lateral_moving: dict[Side, np.ndarray] = {}
    for side in signals.arms:
        intervals = gripper_closed_intervals(signals, side, config)
        closed.extend((side, a, b) for a, b in intervals)
        for grasp, release in intervals:
            events.append(Event(Phase.GRASP, grasp, side))
            if release < last or _gripper(signals, side, config)[last] >= config.gripper_open_above_pct:
                events.append(Event(Phase.RELEASE, release, side))
            lift = _lift_frame(signals, side, grasp, release)
            if lift is not None:
                events.append(Event(Phase.LIFT, lift, side))
        moving = _moving(joint_speeds(signals, side, BODY_JOINTS), config, signals.fps)
        motion.extend(MotionSegment(side, a, b) for a, b in _segments(moving, config, signals.fps))
        lateral_moving[side] = _moving(joint_speeds(signals, side, (LATERAL_JOINT,)), config, signals.fps)
    motion.sort(key=lambda m: m.start)
    if motion:
        events.append(Event(Phase.MOTION_ONSET, motion[0].start, motion[0].side))
        ender = max(motion, key=lambda m: m.end)
        if ender.end < last:
            events.append(Event(Phase.MOTION_END, ender.end, ender.side))
    releases = [e.frame_index for e in events if e.phase == Phase.RELEASE]
    if releases:
        push = _push_onset(lateral_moving, max(releases), config, signals.fps)
        if push is not None:
            events.append(Event(Phase.PUSH, push[1], push[0]))
    events.sort(key=lambda e: (e.frame_index, e.phase.value))
    return EpisodeEvents(n, signals.fps, tuple(events), tuple(motion), tuple(sorted(closed, key=lambda c: c[1])))


def gripper_closed_intervals(signals: EpisodeSignals, side: Side, config: EventConfig) -> list[tuple[int, int]]:
    """(grasp frame, release frame) pairs; an interval still closed at the end ends on the last frame."""
    g = _gripper(signals, side, config)
    intervals: list[tuple[int, int]] = []
    start: int | None = 0 if g[0] < config.gripper_closed_below_pct else None
    for i in range(1, len(g)):
        if start is None and g[i] < config.gripper_closed_below_pct:
            start = i
        elif start is not None and g[i] > config.gripper_open_above_pct:
            intervals.append((start, i))
            start = None
    if start is not None:
        intervals.append((start, len(g) - 1))
    return intervals


def joint_speeds(signals: EpisodeSignals, side: Side, joints: tuple[str, ...]) -> np.ndarray:
    """Largest absolute joint speed of an arm per frame, deg/s (length N, first frame 0)."""
    cols = [signals.joint_column(side, j) for j in joints]
    q = signals.state[:, cols].astype(np.float64)
    speed = np.zeros(len(q))
    if len(q) > 1:
        speed[1:] = np.abs(np.diff(q, axis=0)).max(axis=1) * signals.fps
    return speed


def excursion_deg(signals: EpisodeSignals, side: Side, start: int, end: int) -> np.ndarray:
    """Per frame in [start, end], the largest body-joint distance from the pose at `start`, degrees."""
    cols = [signals.joint_column(side, j) for j in BODY_JOINTS]
    q = signals.state[start : end + 1, cols].astype(np.float64)
    return np.abs(q - q[0]).max(axis=1)


def _gripper(signals: EpisodeSignals, side: Side, config: EventConfig) -> np.ndarray:
    source = signals.action if config.gripper_source == "action" else signals.state
    return source[:, signals.joint_column(side, GRIPPER)]


def _moving(speed: np.ndarray, config: EventConfig, fps: int) -> np.ndarray:
    window = max(1, round(config.smoothing_s * fps))
    smooth = np.convolve(speed, np.ones(window) / window, mode="same")
    return smooth > config.motion_speed_deg_s


def _segments(moving: np.ndarray, config: EventConfig, fps: int) -> list[tuple[int, int]]:
    min_frames = max(1, round(config.min_motion_s * fps))
    out: list[tuple[int, int]] = []
    edges = np.flatnonzero(np.diff(np.concatenate([[0], moving.astype(np.int8), [0]])))
    for a, b in zip(edges[::2], edges[1::2], strict=True):
        if b - a >= min_frames:
            out.append((int(a), int(b - 1)))
    return out


def _lift_frame(signals: EpisodeSignals, side: Side, grasp: int, release: int, min_deg: float = 2.0) -> int | None:
    exc = excursion_deg(signals, side, grasp, release)
    if exc.size == 0 or exc.max() < min_deg:
        return None
    return grasp + int(np.argmax(exc))


def _push_onset(
    lateral_moving: dict[Side, np.ndarray], release: int, config: EventConfig, fps: int
) -> tuple[Side, int] | None:
    best: tuple[Side, int] | None = None
    for side, moving in lateral_moving.items():
        after = moving.copy()
        after[: release + 1] = False
        segments = _segments(after, config, fps)
        if segments and (best is None or segments[0][0] < best[1]):
            best = (side, segments[0][0])
    return best
