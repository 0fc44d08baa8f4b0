"""One loop shape for teleoperation, policy rollouts and replay.

    LoopTimer ──tick──> rig.observe() ──obs──> source.action(obs) ──goal──> rig.act(goal) ──sent
                                                                                    │
                                               hooks.on_step(Step(tick, obs, goal, sent)) <──┘

The action source decides what to do (leaders, a policy, a dataset); the rig's safety layer
decides what is allowed; hooks record, display and measure. A missed bus read is survived (the
previous observation is reused and counted) until reads have failed for `max_stale_s` in a row.
"""

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from robot.errors import MotorTimeoutError
from robot.joint_values import JointValues
from robot.loop_timer import LoopStats, LoopTimer, Tick
from robot.realtime import realtime_thread
from robot.rig import BimanualRig, Observation
from robot.stop_flag import StopFlag

logger = logging.getLogger(__name__)
# How long the loop may act on its last good observation while reads fail, s. Bounded in time, not
# in ticks: 5 ticks (the old bound, ~170 ms at 30 Hz) was one busy machine's scheduling stall during
# an AV1 encode, and half that at 60 Hz. A silent motor still stops the rig within 0.5 s plus one
# read deadline, well before the status polls' 1.5 s (robot/safety/follower_watch.py), and the guard
# bounds every goal sent meanwhile as on any other tick.
MAX_STALE_OBSERVATION_S = 0.5


@dataclass(frozen=True)
class Step:
    """Everything about one control tick."""

    tick: Tick
    observation: Observation
    requested: JointValues  # what the source asked for
    sent: JointValues  # what reached the followers after the safety layer
    stale_observation: bool  # True when this tick's bus read failed and the last one was reused


class ActionSource(Protocol):
    """Where actions come from: leader arms, a policy, a dataset."""

    def action(self, observation: Observation, tick: Tick) -> JointValues:
        """Both arms' goals for this tick."""
        ...


class StepHook(Protocol):
    """Something that watches every step: a recorder, a status line, a metrics collector."""

    def on_step(self, step: Step) -> None:
        """Called after the action was sent (keep it short: it runs on the control thread)."""
        ...


class ControlLoop:
    """Runs a source on a rig at a fixed rate until stopped."""

    def __init__(
        self,
        rig: BimanualRig,
        source: ActionSource,
        *,
        hooks: Sequence[StepHook] = (),
        max_stale_s: float = MAX_STALE_OBSERVATION_S,
        realtime_priority: int = 0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        stop_flag: StopFlag | None = None,
    ) -> None:
        self.rig = rig
        self.source = source
        self.hooks = list(hooks)
        # The rig's `fps` (the file's, or --rig.fps; the replay's --fps already applied); clock and sleep
        # are the timer's.
        self.timer = LoopTimer(rig.config.fps, clock=clock, sleep=sleep)
        self.max_stale_s = max_stale_s
        self.realtime_priority = realtime_priority
        # stop() may come from a SIGTERM handler: no lock. A hook built before the loop (a recording
        # session that ends the run after its last save) is given the flag's `set` instead of `stop`.
        self.stop_event = stop_flag if stop_flag is not None else StopFlag()
        self.missed_reads = 0
        self.steps = 0

    def stop(self) -> None:
        """Ask the loop to finish after the current tick (thread-safe)."""
        self.stop_event.set()

    def run(self, duration_s: float | None = None) -> LoopStats:
        """Run until `stop()`, the duration, or an error (a SafetyStopError among them)."""
        with realtime_thread(self.realtime_priority):
            return self._run(duration_s)

    def _run(self, duration_s: float | None) -> LoopStats:
        last: Observation | None = None
        missed_in_a_row = 0
        first_miss_s = 0.0  # when the current run of failed reads began (its first tick's start)
        self.timer.start()
        first_deadline: float | None = None
        while not self.stop_event.is_set():
            tick = self.timer.wait()
            first_deadline = tick.deadline_s if first_deadline is None else first_deadline
            if duration_s is not None and tick.deadline_s - first_deadline >= duration_s:
                break
            try:
                observation = self.rig.observe()
                missed_in_a_row = 0
                stale = False
            except MotorTimeoutError:
                self.missed_reads += 1
                missed_in_a_row += 1
                first_miss_s = tick.start_s if missed_in_a_row == 1 else first_miss_s
                if last is None or tick.start_s - first_miss_s >= self.max_stale_s:
                    raise
                logger.warning("missed a bus read (%d in a row); reusing the last observation", missed_in_a_row)
                observation, stale = last, True
            last = observation
            requested = self.source.action(observation, tick)
            sent = self.rig.act(requested, now_s=tick.start_s, period_s=self.timer.period_s)
            self.steps += 1
            step = Step(tick, observation, requested, sent, stale)
            for hook in self.hooks:
                hook.on_step(step)
        return self.timer.stats()
