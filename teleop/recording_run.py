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

from rich.console import Console

from robot.control_loop import ControlLoop, Step, StepHook
from robot.rig import BimanualRig
from robot.signals import StopSignals
from robot.stop_flag import StopFlag
from teleop.keys import HINTS, Key, KeyReader
from teleop.quality import QualityCard
from teleop.run_report import card_table
from teleop.session import EpisodeWriter, RecordingSession, SessionConfig
from teleop.session_links import EpisodeRules, RecordedSource
from teleop.session_run import run_session
from teleop.status_line import StatusLine
from teleop.stop_reason import StopKind, StopReason


@dataclass(frozen=True)
class RunPlan:
    """What a command decides about its run beyond the session's options."""

    rules: EpisodeRules  # how an episode starts, ends and is judged
    noun: str = "episode"  # what the summary calls an episode ("rollout")
    # Errors of the command's own that end the run (a policy's), each with a message template ("{error}")
    failures: Mapping[type[Exception], str] = field(default_factory=dict)
    # More step hooks on the loop (the live view), run after the session's
    hooks: tuple[StepHook, ...] = ()
    # More status text after the session's (the policy's inference), asked every tick with the run's source
    status_extra: Callable[[RecordedSource], str] | None = None


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
            plan.rules,
            source=_TheRunsSource(self),
            keys=keys,
            out=_ConsoleOutput(console),
            stop=stop,
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
        if self.plan.rules.scorer is not None:
            self.plan.rules.scorer.drop()  # a rollout still waiting for its score stays unscored (said so)
        with stops.finishing():  # a second signal cuts the wait short and leaves the save to the writer
            self.session.wait_for_save()
        failed_save = self.session.save_failure
        if failed_save is not None and reason.kind is StopKind.DONE:
            reason = StopReason(StopKind.SAVE, f"the failed save of {self.plan.noun} {failed_save.index}")
        return RunOutcome(reason, self.session)


class _TheRunsSource:
    """The session's source: whichever the run follows now (built for the session, so after it)."""

    def __init__(self, run: RecordingRun) -> None:
        self.run = run

    @property
    def engaged(self) -> bool:
        """Whether the run's source drives the followers now."""
        return self.run.source.engaged

    def step_facts(self, step: Step) -> Mapping[str, float]:
        """The run's source's per-frame facts."""
        return self.run.source.step_facts(step)

    def on_key(self, key: Key) -> None:
        """A key for the run's source."""
        self.run.source.on_key(key)

    def episode_notes(self) -> Mapping[str, object]:
        """The run's source's notes for the episode's card."""
        return self.run.source.episode_notes()


class _ConsoleOutput:
    """The session's cards and news on the console."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def card(self, card: QualityCard) -> None:
        """A saved episode's quality card, as a table."""
        self.console.print(card_table([card]))

    def event(self, text: str) -> None:
        """A line of news."""
        self.console.print(text)


class _SessionStatus:
    """A step hook: the status line's text is the session's (phase, episode, time) and the plan's extra."""

    def __init__(self, run: RecordingRun) -> None:
        self.run = run

    def on_step(self, step: Step) -> None:
        text = self.run.session.status(step.tick.start_s)
        extra = self.run.plan.status_extra
        self.run.status.extra = f"{text}  {extra(self.run.source)}" if extra is not None else text
