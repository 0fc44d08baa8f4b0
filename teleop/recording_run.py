"""One recording run, assembled the same way for so101-record (leaders) and so101-deploy (a policy).

    rig + an action source + the session options + the dataset writer
        -> RecordingSession (episodes, keys, gesture, quality cards)  ─┐
        -> StatusLine (rate, bus, cameras, the session's and the source's status)  ├─ hooks of one ControlLoop
        -> ControlLoop at the rig's fps  <──────────────────────────────┘
        -> run(stops): a typed StopReason, after the last save returned

    run = RecordingRun(rig, writer, config.session, plan, lambda session: LeaderSource(rig), console, keys)
    outcome = run.run(stops)

The source is built from the session (a rollout asks whether an episode is under way, to take
charge), and the session from the source (an episode starts once the source is engaged): the run
owns both, so neither is patched in afterwards. The loop's stop flag exists before either, so the
session can end the loop after its last save without a handle set later.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from rich.console import Console

from robot.control_loop import ActionSource, ControlLoop, Step, StepHook
from robot.rig import BimanualRig
from robot.signals import StopSignals
from robot.stop_flag import StopFlag
from teleop.gesture import GestureConfig, GestureDetector
from teleop.highlight import Highlights
from teleop.keys import HINTS, Key, KeyReader
from teleop.live_scoring import LiveScorer
from teleop.quality import QualityGates
from teleop.run_report import card_table
from teleop.session import EpisodeWriter, RecordingSession, SessionConfig
from teleop.session_run import run_session
from teleop.status_line import StatusLine
from teleop.stop_reason import StopKind, StopReason


class RecordedSource(ActionSource, Protocol):
    """An action source a recording run can follow: it says when it drives the arms, and what to keep."""

    @property
    def engaged(self) -> bool:
        """Whether the source drives the followers now (an episode starts only then)."""
        ...

    def step_facts(self, step: Step) -> Mapping[str, float]:
        """Per-frame facts for the dataset's sidecar (never features); {} when there are none."""
        ...

    def on_key(self, key: Key) -> None:
        """A key the session does not handle (a rollout's take-over); most sources ignore them."""
        ...

    def episode_notes(self) -> Mapping[str, object]:
        """More facts for the quality card of the episode being saved; {} when there are none."""
        ...


@dataclass(frozen=True)
class RunPlan:
    """What a command decides about its run beyond the session's options."""

    gates: QualityGates  # so101-record re-records an episode that fails them; so101-deploy only marks it
    gesture: GestureConfig  # the leaders' squeeze that starts and ends an episode (off for a policy)
    noun: str = "episode"  # what the summary calls an episode ("rollout")
    # Errors of the command's own that end the run (a policy's), each with a message template ("{error}")
    failures: Mapping[type[Exception], str] = field(default_factory=dict)
    # More step hooks on the loop (the live view), run after the session's
    hooks: tuple[StepHook, ...] = ()
    # More status text after the session's (the policy's inference), asked every tick with the run's source
    status_extra: Callable[[RecordedSource], str] | None = None
    # Live scores typed when a rollout ends (so101-deploy --live_scores.enabled=true)
    scorer: LiveScorer | None = None
    # An episode ends when the source stops being engaged (each correction one episode)
    end_when_disengaged: bool = False
    # No episode until k, which keeps the last seconds (so101-deploy --mode=highlight)
    highlights: Highlights | None = None


@dataclass(frozen=True)
class RunOutcome:
    """How a recording run ended, and the session that holds its episodes' cards and saves."""

    reason: StopReason
    session: RecordingSession


class RecordingRun:
    """A session, a status line and a control loop on one rig, built in one place."""

    def __init__(
        self,
        rig: BimanualRig,
        writer: EpisodeWriter,
        session_config: SessionConfig,
        plan: RunPlan,
        source_for: Callable[[RecordingSession], RecordedSource],
        console: Console,
        keys: KeyReader,
    ) -> None:
        self.plan = plan
        stop = StopFlag()
        self.session = RecordingSession(
            rig,
            writer,
            session_config,
            plan.gates,
            GestureDetector(plan.gesture),
            keys=keys.poll,
            engaged=self._engaged,
            on_card=lambda card: console.print(card_table([card])),
            on_event=console.print,
            stop_loop=stop.set,
            step_facts=self._step_facts,
            on_key=self._on_key,
            episode_notes=self._episode_notes,
            scorer=plan.scorer,
            end_when_disengaged=plan.end_when_disengaged,
            highlights=plan.highlights,
        )
        self.source = source_for(self.session)
        self.status = StatusLine(rig, console, hints=HINTS if keys.enabled else "Ctrl-C: stop")
        hooks = [self.session, _SessionStatus(self), *plan.hooks, self.status]
        self.loop = ControlLoop(
            rig, self.source, hooks=hooks, realtime_priority=rig.config.realtime_priority, stop_flag=stop
        )

    def run(self, stops: StopSignals) -> RunOutcome:
        """Run until the session ends or a stop; returns once the last save returned.

        Raises:
            SignalStop: a second signal escalated to an e-stop (the writer finishes a save on its own).
        """
        reason = run_session(self.loop, self.session, self.status, self.plan.failures, stops=stops)
        if self.plan.scorer is not None:
            self.plan.scorer.drop()  # a rollout still waiting for its score stays unscored (said so)
        with stops.finishing():  # a second signal cuts the wait short and leaves the save to the writer
            self.session.wait_for_save()
        failed_save = self.session.save_failure
        if failed_save is not None and reason.kind is StopKind.DONE:
            reason = StopReason(StopKind.SAVE, f"the failed save of {self.plan.noun} {failed_save.index}")
        return RunOutcome(reason, self.session)

    def _engaged(self) -> bool:
        return self.source.engaged

    def _step_facts(self, step: Step) -> Mapping[str, float]:
        return self.source.step_facts(step)

    def _on_key(self, key: Key) -> None:
        self.source.on_key(key)

    def _episode_notes(self) -> Mapping[str, object]:
        return self.source.episode_notes()


class _SessionStatus:
    """A step hook: the status line's text is the session's (phase, episode, time) and the plan's extra."""

    def __init__(self, run: RecordingRun) -> None:
        self.run = run

    def on_step(self, step: Step) -> None:
        text = self.run.session.status(step.tick.start_s)
        extra = self.run.plan.status_extra
        self.run.status.extra = f"{text}  {extra(self.run.source)}" if extra is not None else text
