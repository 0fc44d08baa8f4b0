"""The parts of one so101-deploy run: the policy as a source, the rollout (corrected or not), the report.

policy_source(...)   the engine for the checkpoint (or the remote server), asked every tick
rollout_source(...)  the policy in charge while an episode records; with --correction.enabled=true
                     wrapped so the person can take over with the leaders (policies/correction.py)
report(...)          the quality cards, the saves and the next steps, once the run has ended
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from rich.console import Console

from policies.correction import CorrectionConfig, CorrectionSource
from policies.engines.config import EngineConfig, EngineKind
from policies.engines.factory import make_engine
from policies.engines.remote import RemoteEngineConfig
from policies.rollout import RolloutSource, StartAt
from policies.source import PolicySource, policy_input
from policies.start_pose import DemonstrationStart
from robot.cameras.shape import camera_shapes
from robot.config import RigConfig
from robot.rig import BimanualRig
from robot.rig_ports import FoundPorts
from teleop.dataset.results import OpenReport
from teleop.dataset.spill import SpillingWriter
from teleop.highlight import HighlightConfig, Highlights
from teleop.keys import Key, KeyReader
from teleop.pedal import PedalReader
from teleop.recording_run import RunOutcome, RunPlan
from teleop.run_report import card_table, describe_saves, rollout_next_steps
from teleop.session import RecordingSession, SessionConfig
from teleop.session_links import RecordedSource
from teleop.table_writer import table_writer


class RolloutMode(StrEnum):
    """How rollouts are cut into episodes (LeRobot's rollout strategies of the same names)."""

    EPISODES = "episodes"  # --session.num_episodes rollouts, the arms held for --session.reset_s between them
    # The policy never stops (until q or a signal); it is recorded in back-to-back episodes of
    # --session.episode_s each, so a crash loses at most the one in progress (long unattended runs)
    SENTRY = "sentry"
    # The policy never stops and nothing is recorded until k, which keeps the last --highlight.keep_s
    # seconds and what follows until k again (LeRobot's highlight)
    HIGHLIGHT = "highlight"


def session_for(mode: RolloutMode, session: SessionConfig) -> SessionConfig:
    """The session a mode runs: sentry rotates episodes with no reset, until stopped."""
    if mode is RolloutMode.SENTRY:
        return replace(session, num_episodes=SENTRY_EPISODES, reset_s=0.0)
    if mode is RolloutMode.HIGHLIGHT:  # episodes start on k only
        return replace(session, num_episodes=SENTRY_EPISODES, reset_s=0.0, start_on_gesture=True)
    return session


SENTRY_EPISODES = 1_000_000  # "until stopped": a sentry run ends by q or a signal
POLICY_FAILED = "the policy failed: {error} (nothing of it was sent; the episode was discarded)"


@dataclass(frozen=True)
class PolicyPlan:
    """What builds the policy's source: the rig, the engine and the task."""

    rig: RigConfig
    engine: EngineConfig
    remote: RemoteEngineConfig | None
    task: str


def policy_source(plan: PolicyPlan, predictor: Any, rig: BimanualRig, console: Console) -> PolicySource:
    """The engine for the checkpoint (or the remote server), as the source that asks it every tick."""
    warmup = policy_input(rig.observe(), plan.task) if plan.engine.kind is EngineKind.ENSEMBLE else None
    cameras = camera_shapes(plan.rig.cameras)
    choice = make_engine(plan.engine, predictor, fps=plan.rig.fps, warmup=warmup, remote=plan.remote, cameras=cameras)
    if choice.notice:
        console.print(f"[yellow]{choice.notice}")
    console.print(f"engine: {choice.kind}")
    # Taking charge, resuming after starving and handing back to a hold ramp (the rig's transitions).
    return PolicySource(choice.engine, task=plan.task, on_transition=rig.begin_transition)


def rollout_source(
    policy: PolicySource,
    rig: BimanualRig,
    correction: CorrectionConfig,
    console: Console,
    mode: RolloutMode,
    start: DemonstrationStart | None,
    session: RecordingSession,
) -> RecordedSource:
    """The policy in charge while the session records an episode (or is about to), the arms held between.

    In sentry mode the policy is always in charge (episodes rotate under it). With corrections on,
    the person can take over with the leaders and hand back. With a `start`, the arms are ramped
    there before each rollout, which begins once they arrived.
    """
    in_charge = session.in_progress if mode is RolloutMode.EPISODES else _always
    start_at = None if start is None else StartAt(start.pose, reached=lambda: not rig.in_transition)
    rollout = RolloutSource(policy, in_charge=in_charge, on_transition=rig.begin_transition, start=start_at)
    if not correction.enabled:
        return rollout
    return CorrectionSource(rollout, rig, correction, on_event=say(console))


def highlights_for(mode: RolloutMode, config: HighlightConfig, fps: int) -> Highlights | None:
    """The pre-roll of --mode=highlight (None in the other modes)."""
    return Highlights(config, fps) if mode is RolloutMode.HIGHLIGHT else None


def episode_writer(
    writer: Any,
    highlights: Highlights | None,
    rig: BimanualRig,
    found: FoundPorts,
    dataset_key: str,
    opened: OpenReport | None,
    plan: RunPlan,
) -> Any:
    """The writer the session hands frames to.

    A highlight's queues what the ring cannot take yet: its pre-roll and as much again
    (teleop/dataset/spill.py). Whole rollouts recorded on the virtual rig each start on a freshly
    tidied table and save with the cloth's truth (teleop/table_writer.py); a highlight or a
    correction is a part of a rollout, and tidying at its start would move the cloth under the arms.
    """
    if highlights is not None:
        return SpillingWriter(writer, round(2 * highlights.config.keep_s * highlights.fps))
    if opened is None or plan.rules.end_when_disengaged:
        return writer
    return table_writer(writer, rig, found, dataset_key=dataset_key, operator=False, first_index=opened.episodes)


@contextmanager
def keys_and_pedal(correction: CorrectionConfig) -> Iterator[KeyReader]:
    """The terminal's keys, with the foot pedal's take-over among them when there is one."""
    if correction.pedal_device is None:
        with KeyReader() as keys:
            yield keys
        return
    with (
        PedalReader(correction.pedal_device, {correction.pedal_key: Key.TAKE_OVER}) as pedal,
        KeyReader(extra=pedal.poll) as keys,
    ):
        yield keys


def say(console: Console) -> Callable[[str], None]:
    """Print a line as it is (no markup; numbers not coloured, so a terminal test reads them whole)."""
    return lambda text: console.print(text, markup=False, highlight=False)


def _always(now_s: float) -> bool:
    return True


def status_text(policy: PolicySource, source: RecordedSource, highlights: Highlights | None) -> str:
    """The policy's inference figures, who has the arms when a person may take over, what k would keep."""
    text = policy.status_text()
    if isinstance(source, CorrectionSource):
        text = f"{source.status_text()}  {text}"
    if highlights is not None:
        text = f"k keeps {highlights.remembered_s:.0f} s  {text}"
    return text


def report(
    outcome: RunOutcome,
    policy: PolicySource,
    writer: Any,
    console: Console,
    *,
    record: bool,
    folder: Any,
    removed: bool,
) -> None:
    """The quality cards, why the run stopped, each rollout's save, and the next steps."""
    console.print(card_table(outcome.session.cards))
    console.print(f"stopped by {outcome.reason}; {policy.stats().chunks} chunks; {policy.status_text()}")
    if not record:
        return
    for line in describe_saves(outcome.session, writer.report.episodes, folder, noun="rollout"):
        console.print(line, markup=False)  # error texts may hold brackets
    if removed:
        console.print(f"no rollout was saved: the new dataset at {folder} was removed", markup=False)
    else:
        console.print(rollout_next_steps(folder), markup=False, highlight=False, soft_wrap=True)
