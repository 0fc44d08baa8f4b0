"""The replay's record of every tick: a step hook on the control loop.

    log = TickLog(rig, frame=lambda: source.frame, facts=lambda: source.facts)   # just before the run
    ControlLoop(rig, source, hooks=[log]).run()
    trace = log.trace()          # arrays, one row per tick, for the analysis and the report

Per tick: the recorded frame it replayed, timing (deadline, start, lateness, skipped deadlines,
wall-clock time), the goal the source asked for, what the safety layer let through and the arms
sent, the follower state read at the start of the tick, and the safety interventions of that
tick (taken from the rig's counters, so each names its frame and joint).
"""

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from policies.replay.sources import PolicyFacts
from robot.control_loop import Step
from robot.joints import BIMANUAL_KEYS
from robot.rig import BimanualRig
from robot.safety.guard import SafetyEvent


@dataclass(frozen=True)
class FrameEvent:
    """One safety intervention, with the frame it happened at."""

    frame: int  # recorded frame index
    joint: str  # rig key, e.g. left_elbow_flex.pos
    kind: str  # limit, step, velocity, non_finite
    requested: float  # what the source asked for
    sent: float  # what the safety layer let through


@dataclass(frozen=True)
class TickTrace:
    """Every tick of one episode's replay, as arrays (row i = tick i)."""

    frames: np.ndarray  # int (n,) recorded frame index replayed at each tick
    deadline_s: np.ndarray  # (n,) when each tick was due (the loop's clock)
    late_s: np.ndarray  # (n,) how late each tick started
    skipped: np.ndarray  # int (n,) deadlines skipped just before each tick
    wall_s: np.ndarray  # (n,) real monotonic time at the end of each tick
    requested: np.ndarray  # (n, 12) what the source asked for
    sent: np.ndarray  # (n, 12) what reached the arms after the safety layer
    observed: np.ndarray  # (n, 12) follower state read at the start of each tick
    stale: np.ndarray  # bool (n,) the tick reused the previous observation
    events: tuple[FrameEvent, ...]  # safety interventions
    facts: tuple[PolicyFacts | None, ...]  # per tick, policy replays only


@dataclass
class TickLog:
    """A StepHook that keeps every tick of one loop run."""

    rig: BimanualRig
    frame: Callable[[], int]  # the frame the source replayed at this tick
    facts: Callable[[], PolicyFacts | None] = lambda: None
    _rows: list[tuple] = field(default_factory=list)
    _events: list[FrameEvent] = field(default_factory=list)
    _seen_events: int = 0

    def __post_init__(self) -> None:
        # Interventions before this log existed (an ease-in on the same rig) belong to no frame.
        self._seen_events = len(self.rig.counters.events)

    def on_step(self, step: Step) -> None:
        """Keep one tick (runs on the control thread: no more than copying)."""
        wall = time.monotonic()
        frame = self.frame()
        events = self.rig.counters.events
        self._events.extend(_frame_event(frame, e) for e in events[self._seen_events :])
        self._seen_events = len(events)
        self._rows.append(
            (
                frame,
                step.tick.deadline_s,
                step.tick.late_s,
                step.tick.skipped,
                wall,
                step.requested.vector,
                step.sent.vector,
                step.observation.state().vector,
                step.stale_observation,
                self.facts(),
            )
        )

    def trace(self) -> TickTrace:
        """Everything kept so far, as arrays."""
        rows = self._rows
        columns = list(zip(*rows, strict=True)) if rows else [()] * 10
        width = len(BIMANUAL_KEYS)
        return TickTrace(
            frames=np.asarray(columns[0], dtype=int),
            deadline_s=np.asarray(columns[1], dtype=float),
            late_s=np.asarray(columns[2], dtype=float),
            skipped=np.asarray(columns[3], dtype=int),
            wall_s=np.asarray(columns[4], dtype=float),
            requested=np.asarray(columns[5], dtype=float).reshape(-1, width),
            sent=np.asarray(columns[6], dtype=float).reshape(-1, width),
            observed=np.asarray(columns[7], dtype=float).reshape(-1, width),
            stale=np.asarray(columns[8], dtype=bool),
            events=tuple(self._events),
            facts=tuple(columns[9]),
        )


def _frame_event(frame: int, event: SafetyEvent) -> FrameEvent:
    side = event.arm.split("_")[0]
    return FrameEvent(frame, f"{side}_{event.joint}.pos", str(event.kind), event.requested, event.sent)
