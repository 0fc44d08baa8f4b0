r"""so101-deploy: run an ACT or SmolVLA checkpoint on the arms at 30 FPS and record every rollout.

    so101-deploy --policy.path=outputs/train/act_fold/checkpoints/last/pretrained_model     # virtual rig
    so101-deploy --config_path=hardware_configs/so101_bimanual.yaml \\
        --policy.path=outputs/train/smolvla_fold/checkpoints/last/pretrained_model --engine.kind=rtc \\
        --dataset.repo_id=me/eval_smolvla_fold --session.num_episodes=10 --session.episode_s=40
    so101-deploy --policy.path=... --policy.rename_map='{"overhead": "top"}'     # camera names differ
    so101-deploy --engine.kind=remote --remote.host=gpu-box --remote.policy_type=smolvla \\
        --remote.checkpoint=/data/smolvla_fold --remote.policy_device=cuda       # policy on another machine

Before any weights load, the checkpoint's cameras, image sizes, state and action are checked against
the rig; a mismatch stops with every difference listed. The control loop never waits on inference
(engine `async`, the default, computes the next chunk while the current one executes; `sync` is
LeRobot's baseline); when no action is ready the arms hold their last commanded position. The safety
layer is always on, and a NaN from the policy ends the episode before anything reaches the bus.
Rollouts are recorded into an evaluation dataset with the demonstrations' features; per-tick
inference facts (chunk id, latency, queue depth, starved tick) are kept beside it, where training
never looks. Keys: →/n end the episode, q stop and save, e e-stop. Ctrl-C, SIGTERM and SIGHUP stop as
so101-record does (README, "Stopping"). At the end it prints the next steps for the rollouts, each a
command that pastes: `so101-judge --dataset.root=<folder>`, then so101-review, then so101-report.
"""

import sys
from contextlib import closing
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from rich.console import Console
from rich.markup import escape

from policies.checkpoint_units import degrees_or_refuse
from policies.engines.config import EngineConfig, EngineKind
from policies.engines.factory import make_engine
from policies.engines.remote import RemoteEngineConfig
from policies.errors import InferenceError, PolicyError
from policies.rollout import RolloutSource
from policies.runner import CheckedPolicy, PolicyOptions, PolicyRunner
from policies.source import PolicySource, policy_input
from robot.cameras.shape import camera_shapes
from robot.cli import parse_command, run_command
from robot.config import RigConfig
from robot.errors import ConfigError
from robot.rig import BimanualRig
from robot.rig_ports import rig_ports
from robot.signals import StopSignals
from teleop.dataset_options import DatasetConfig, NoDataset, close_dataset, dataset_writer, upload_if_asked
from teleop.gesture import GestureConfig
from teleop.keys import KeyReader
from teleop.quality import GateAction, QualityGates
from teleop.recording_run import RecordingRun, RunOutcome, RunPlan
from teleop.run_report import card_table, describe_open, describe_saves, rollout_next_steps
from teleop.session import RecordingSession, SessionConfig


@dataclass(frozen=True)
class DeployConfig:
    """Options of so101-deploy (the rig comes from --config_path)."""

    rig: RigConfig = field(default_factory=RigConfig)
    policy: PolicyOptions = field(default_factory=PolicyOptions)
    engine: EngineConfig = field(default_factory=EngineConfig)
    # Only with engine.kind=remote: where LeRobot's policy server runs and what it serves
    remote: RemoteEngineConfig | None = None
    dataset: DatasetConfig = field(default_factory=lambda: DatasetConfig(repo_id="local/so101_eval"))
    session: SessionConfig = field(default_factory=lambda: SessionConfig(num_episodes=10, episode_s=30.0))
    # Control rate, Hz, for this run only; default the rig file's `fps` (every consumer reads it from the rig)
    fps: int | None = None
    # Record the rollouts into the evaluation dataset (off: run only)
    record: bool = True

    def __post_init__(self) -> None:
        remote = self.engine.kind is EngineKind.REMOTE
        if remote and self.remote is None:
            raise ConfigError("engine.kind=remote needs --remote.host, --remote.checkpoint and --remote.policy_type")
        if not remote and not self.policy.path:
            raise ConfigError("policy.path is empty: pass a checkpoint folder, e.g. --policy.path=outputs/.../last")
        if self.record and not self.rig.cameras:
            raise ConfigError("the rig file has no cameras: an evaluation dataset needs the demonstrations' cameras")


def check_checkpoint(config: DeployConfig, console: Console) -> CheckedPolicy | None:
    """Read the checkpoint and check it against the rig (no weights yet); None for remote."""
    if config.engine.kind is EngineKind.REMOTE:
        return None
    from policies.contract import RigSpec

    checked = PolicyRunner(config.policy).check(RigSpec.from_rig_config(config.rig))
    console.print(f"checkpoint {config.policy.path}: {checked.describe()} — fits the rig")
    units = degrees_or_refuse(checked.checkpoint, config.policy.units)
    console.print(f"joint units: {units.describe('--policy.units')}", markup=False)
    for note in checked.contract.notes:
        console.print(f"  note: {note}")
    return checked


def load_predictor(config: DeployConfig, checked: CheckedPolicy | None, console: Console) -> Any:
    """Load the checked checkpoint's weights and processors; None for remote."""
    if checked is None:
        return None
    loaded = PolicyRunner(config.policy).load(checked)
    console.print(f"loaded on {loaded.device}")
    return loaded.predictor


def main(argv: list[str] | None = None) -> int:
    """Entry point of so101-deploy: parse, check the checkpoint, run the rollouts, report."""
    stops = StopSignals()  # SIGINT, SIGTERM, SIGHUP: the loop stops, a save in progress completes

    def body() -> int:
        config = parse_command(DeployConfig, argv)
        console = Console()
        try:
            return _deploy(config, console, stops)
        except (PolicyError, InferenceError) as e:
            console.print(f"[bold red]error:[/] {escape(str(e))}", soft_wrap=True)  # unwrapped: its Next: pastes
            return 1

    return run_command(body, stops, argv)


def _deploy(config: DeployConfig, console: Console, stops: StopSignals) -> int:
    checked = check_checkpoint(config, console)
    writer: Any = NoDataset()
    opened = None
    if config.record:
        writer = dataset_writer(config.dataset, config.rig)
        # Before the weights load: the writer process forks while no thread runs yet (see DatasetWriter).
        opened = writer.open()
        console.print(describe_open(config.dataset.repo_id, opened))
    try:
        predictor = load_predictor(config, checked, console)
        with (
            rig_ports(config.rig) as found,
            stops.rig(BimanualRig(config.rig, found.ports)) as rig,
            KeyReader() as keys,
            closing(_policy_source(config, predictor, rig, console)) as policy,
        ):
            plan = RunPlan(
                QualityGates(on_fail=GateAction.KEEP),  # a rollout is evidence about the policy: only marked
                GestureConfig(enabled=False),
                noun="rollout",
                failures={InferenceError: POLICY_FAILED},
                status_extra=policy.status_text,
            )
            rollout_for = partial(_rollout, policy, rig)
            outcome = RecordingRun(rig, writer, config.session, plan, rollout_for, console, keys).run(stops)
    finally:
        removed = opened is not None and close_dataset(writer, opened, stops)  # a new dataset left empty: gone
    _report(config, outcome, policy, writer, console, removed)
    if config.record and upload_if_asked(config.dataset, stops, removed):
        console.print(f"uploaded to the hub as {config.dataset.repo_id}", markup=False)
    return 1 if outcome.reason.failed or outcome.session.save_failure is not None else 0


POLICY_FAILED = "the policy failed: {error} (nothing of it was sent; the episode was discarded)"


def _policy_source(config: DeployConfig, predictor: Any, rig: BimanualRig, console: Console) -> PolicySource:
    """The engine for the checkpoint (or the remote server), as the source that asks it every tick."""
    warmup = policy_input(rig.observe(), config.session.task) if config.engine.kind is EngineKind.ENSEMBLE else None
    cameras = camera_shapes(config.rig.cameras)
    choice = make_engine(config.engine, predictor, fps=config.rig.fps, warmup=warmup, remote=config.remote,
                         cameras=cameras)  # fmt: skip
    if choice.notice:
        console.print(f"[yellow]{choice.notice}")
    console.print(f"engine: {choice.kind}")
    # Taking charge, resuming after starving and handing back to a hold ramp (the rig's transitions).
    return PolicySource(choice.engine, task=config.session.task, on_transition=rig.begin_transition)


def _rollout(policy: PolicySource, rig: BimanualRig, session: RecordingSession) -> RolloutSource:
    """The policy in charge while the session records an episode (or is about to), the arms held between."""
    return RolloutSource(policy, in_charge=session.in_progress, on_transition=rig.begin_transition)


def _report(
    config: DeployConfig, outcome: RunOutcome, policy: PolicySource, writer: Any, console: Console, removed: bool
) -> None:
    console.print(card_table(outcome.session.cards))
    console.print(f"stopped by {outcome.reason}; {policy.stats().chunks} chunks; {policy.status_text()}")
    if config.record:
        folder = config.dataset.folder()
        for line in describe_saves(outcome.session, writer.report.episodes, folder, noun="rollout"):
            console.print(line, markup=False)  # error texts may hold brackets
        if removed:
            console.print(f"no rollout was saved: the new dataset at {folder} was removed", markup=False)
        else:
            console.print(rollout_next_steps(folder), markup=False, highlight=False, soft_wrap=True)


if __name__ == "__main__":
    sys.exit(main())
