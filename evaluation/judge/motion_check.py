"""Heuristic motion check: per-arm motion and gripper events, reported beside the judge.

It catches "the policy did nothing" and checks the judge against what the joints did. Without an API
key it is also an offline scorer, labelled `heuristic`: it scores motion evidence only, never the
cloth, and each criterion's score is capped by the rubric's `heuristic_max`.

An arm whose body joints never leave the start pose (by more than `idle_excursion_deg`) did nothing:
its gripper closing and opening in place cannot have grasped the cloth, so its events feed no signal
(they are still counted in its `ArmMotion`). With both arms idle every signal is 0.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from evaluation.config_checks import reject_non_finite
from evaluation.episode_source import EpisodeSignals
from evaluation.errors import ConfigError
from evaluation.judge.events import LATERAL_JOINT, EpisodeEvents, excursion_deg, joint_speeds
from evaluation.rubric import Criterion
from evaluation.vocabulary import HeuristicSignal, Phase
from robot.joints import BODY_JOINTS, Side

HEURISTIC_VERSION = "motion-v2"  # v2: an idle arm's gripper events count for nothing


@dataclass(frozen=True)
class MotionCheckConfig:
    """Thresholds of the heuristic motion check."""

    idle_excursion_deg: float = 3.0  # an arm whose body joints never leave the start pose by more did nothing, deg
    carry_deg: float = 10.0  # arm excursion while the gripper is closed that counts as carrying, deg
    push_deg: float = 10.0  # sideways (shoulder_pan) travel after the last release that counts as a push, deg

    def __post_init__(self) -> None:
        """Validate the thresholds."""
        reject_non_finite(self, "motion")
        for name in ("idle_excursion_deg", "carry_deg", "push_deg"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"motion_check.{name}={getattr(self, name)} must be > 0 degrees")


@dataclass(frozen=True)
class ArmMotion:
    """What one arm did."""

    side: Side  # which arm
    path_deg: float  # summed absolute travel of the body joints, degrees
    max_excursion_deg: float  # largest body-joint distance from the start pose, degrees
    moving_s: float  # time spent moving, seconds
    grasps: int  # gripper closings
    releases: int  # gripper openings after a closing
    moved: bool  # max_excursion_deg above the idle threshold


@dataclass(frozen=True)
class MotionCheck:
    """The heuristic's view of an episode."""

    arms: tuple[ArmMotion, ...]  # left, right
    did_nothing: bool  # no arm left its start pose (gripper events of an idle arm do not count)
    signals: tuple[tuple[HeuristicSignal, float], ...]  # strength of each signal: 0, 0.5 or 1
    version: str = HEURISTIC_VERSION  # heuristic version, stored with every result

    @property
    def idle_arms(self) -> tuple[ArmMotion, ...]:
        """Arms that never left their start pose."""
        return tuple(a for a in self.arms if not a.moved)

    def signal(self, which: HeuristicSignal) -> float | None:
        """Strength of a signal, or None for `HeuristicSignal.NONE`."""
        return dict(self.signals).get(which)

    def score(self, criterion: Criterion) -> float | None:
        """Motion evidence for a criterion (capped by its `heuristic_max`), or None if it has no signal.

        This is what the joints show, not what the cloth did: the offline scorer
        (`aggregate.heuristic_scores`) decides which of these it may report as a score.
        """
        strength = self.signal(criterion.heuristic)
        return None if strength is None else min(strength, criterion.heuristic_max)

    def to_dict(self) -> dict[str, object]:
        """JSON-serialisable form for the store and reports."""
        return {
            "version": self.version,
            "did_nothing": self.did_nothing,
            "signals": {s.value: v for s, v in self.signals},
            "arms": [
                {
                    "side": a.side.value,
                    "path_deg": round(a.path_deg, 2),
                    "max_excursion_deg": round(a.max_excursion_deg, 2),
                    "moving_s": round(a.moving_s, 2),
                    "grasps": a.grasps,
                    "releases": a.releases,
                    "moved": a.moved,
                }
                for a in self.arms
            ],
        }


def check_motion(signals: EpisodeSignals, events: EpisodeEvents, config: MotionCheckConfig) -> MotionCheck:
    """Summarise arm motion and gripper use, and grade the heuristic signals."""
    arms = []
    for side in signals.arms:
        exc = excursion_deg(signals, side, 0, len(signals.state) - 1)
        speeds = joint_speeds(signals, side, BODY_JOINTS)
        moving = np.zeros(len(speeds), dtype=bool)
        for m in events.motion:
            if m.side == side:
                moving[m.start : m.end + 1] = True
        arms.append(
            ArmMotion(
                side=side,
                path_deg=float(speeds[moving].sum() / signals.fps),
                max_excursion_deg=float(exc.max(initial=0.0)),
                moving_s=float(moving.sum()) / signals.fps,
                grasps=sum(1 for e in events.of(Phase.GRASP) if e.side == side),
                releases=sum(1 for e in events.of(Phase.RELEASE) if e.side == side),
                moved=bool(exc.max(initial=0.0) > config.idle_excursion_deg),
            )
        )
    did_nothing = not any(a.moved for a in arms)
    moved = frozenset(a.side for a in arms if a.moved)
    active = _only_sides(events, moved)
    graded = (
        (HeuristicSignal.GRASP_WITH_MOTION, _grasp_with_motion(signals, active, config)),
        (HeuristicSignal.GRASP_RELEASE_CYCLE, _grasp_release_cycle(active)),
        (HeuristicSignal.MOTION_AFTER_RELEASE, _motion_after_release(signals, active, config, moved)),
    )
    return MotionCheck(arms=tuple(arms), did_nothing=did_nothing, signals=graded)


def _only_sides(events: EpisodeEvents, sides: frozenset[Side]) -> EpisodeEvents:
    """The events of the arms in `sides` (events of no particular arm, such as start and final, stay)."""
    return replace(
        events,
        events=tuple(e for e in events.events if e.side is None or e.side in sides),
        motion=tuple(m for m in events.motion if m.side in sides),
        closed_intervals=tuple(c for c in events.closed_intervals if c[0] in sides),
    )


def _grasp_with_motion(signals: EpisodeSignals, events: EpisodeEvents, config: MotionCheckConfig) -> float:
    if not events.closed_intervals:
        return 0.0
    carried = max(float(excursion_deg(signals, side, a, b).max(initial=0.0)) for side, a, b in events.closed_intervals)
    return 1.0 if carried >= config.carry_deg else 0.5


def _grasp_release_cycle(events: EpisodeEvents) -> float:
    if events.of(Phase.RELEASE):
        return 1.0
    return 0.5 if events.of(Phase.GRASP) else 0.0


def _motion_after_release(
    signals: EpisodeSignals, events: EpisodeEvents, config: MotionCheckConfig, sides: frozenset[Side]
) -> float:
    releases = events.of(Phase.RELEASE)
    if not releases:
        return 0.0
    start = max(e.frame_index for e in releases)
    travel = 0.0
    for side in sides:
        col = signals.joint_column(side, LATERAL_JOINT)
        pan = signals.state[start:, col].astype(np.float64)
        if pan.size:
            travel = max(travel, float(np.abs(pan - pan[0]).max()))
    if events.of(Phase.PUSH) and travel >= config.push_deg:
        return 1.0
    return 0.5 if travel >= config.push_deg / 2 else 0.0
