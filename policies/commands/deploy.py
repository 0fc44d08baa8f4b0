r"""so101-deploy: run an ACT or SmolVLA checkpoint on the arms at 30 FPS and record every rollout.

    so101-deploy --policy.path=outputs/train/act_fold/checkpoints/last/pretrained_model     # virtual rig
    so101-deploy --config_path=hardware_configs/so101_bimanual.yaml \\
        --policy.path=outputs/train/smolvla_fold/checkpoints/last/pretrained_model --engine.kind=rtc \\
        --dataset.repo_id=me/eval_smolvla_fold --session.num_episodes=10 --session.episode_s=40
    so101-deploy --policy.path=... --policy.rename_map='{"overhead": "top"}'     # camera names differ
    so101-deploy --engine.kind=remote --remote.host=gpu-box --remote.policy_type=smolvla \\
        --remote.checkpoint=/data/smolvla_fold --remote.policy_device=cuda       # policy on another machine
    so101-deploy --policy.path=... --start_pose=demonstrations   # each rollout starts where the demos did
    so101-deploy --policy.path=... --correction.enabled=true     # c or Tab: take over with the leaders, hand back
    so101-deploy --policy.path=... --mode=sentry --session.episode_s=60   # unattended: until q, a file a minute
    so101-deploy --policy.path=... --mode=highlight --highlight.keep_s=10  # k keeps the last 10 s, to k again

The checkpoint is checked against the rig before any weights load; the loop never waits on inference
(engine `async`); the safety layer is always on. Rollouts are recorded with the demonstrations'
features, inference facts beside them. Keys: →/n end the episode, q stop and save, e e-stop; with
--correction.enabled=true, c or Tab takes over with the leaders (driven to the followers at the ramp
speed, then released; the person's frames carry LeRobot's `intervention` feature) and hands back.
Signals stop as so101-record does. At the end it prints what to run next: the judge, review and report.
"""

import sys
from contextlib import closing
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console

from policies.checkpoint_units import degrees_or_refuse
from policies.correction import CorrectionConfig, CorrectionRecording
from policies.deploy_run import (
    POLICY_FAILED,
    PolicyPlan,
    RolloutMode,
    episode_writer,
    highlights_for,
    keys_and_pedal,
    policy_source,
    report,
    rollout_source,
    say,
    session_for,
    status_text,
)
from policies.engines.config import EngineConfig, EngineKind
from policies.engines.remote import RemoteEngineConfig
from policies.errors import InferenceError
from policies.runner import CheckedPolicy, PolicyOptions, PolicyRunner
from policies.start_pose import DemonstrationStart, StartPose, demonstrations_start
from robot.cli import parse_command, run_command
from robot.config import RigConfig
from robot.errors import ConfigError
from robot.rig import BimanualRig
from robot.rig_ports import rig_ports
from robot.shell.old_spellings import RIG_RATE
from robot.signals import StopSignals
from teleop.dataset_options import DatasetConfig, NoDataset, close_dataset, dataset_writer, upload_if_asked
from teleop.gesture import GestureConfig
from teleop.highlight import HighlightConfig
from teleop.live_scoring import LiveScoreConfig, LiveScorer
from teleop.quality import GateAction, QualityGates
from teleop.recording_run import RecordingRun, RunPlan
from teleop.run_report import describe_open
from teleop.session import SessionConfig
from teleop.session_links import EpisodeRules

OLD_SPELLINGS = RIG_RATE  # --fps, now --rig.fps (robot/shell/old_spellings.py)


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
    # Record the rollouts into the evaluation dataset (off: run only)
    record: bool = True
    # Take over a rollout with the leader arms, correct it, hand it back (--correction.enabled=true)
    correction: CorrectionConfig = field(default_factory=CorrectionConfig)
    # episodes: --session.num_episodes rollouts with resets; sentry: the policy runs until q or a signal,
    # recorded in back-to-back episodes of --session.episode_s (a crash loses only the one in progress)
    mode: RolloutMode = RolloutMode.EPISODES
    # --mode=highlight: what k keeps from before it
    highlight: HighlightConfig = field(default_factory=HighlightConfig)
    # Score each rollout with keys when it ends (--live_scores.enabled=true --live_scores.operator=ana)
    live_scores: LiveScoreConfig = field(default_factory=LiveScoreConfig)
    # here: each rollout starts where the arms are; demonstrations: the followers are first ramped to
    # where the checkpoint's training episodes started (the median first state), and back between rollouts
    start_pose: StartPose = StartPose.HERE

    def __post_init__(self) -> None:
        remote = self.engine.kind is EngineKind.REMOTE
        if remote and self.remote is None:
            raise ConfigError("engine.kind=remote needs --remote.host, --remote.checkpoint and --remote.policy_type")
        if not remote and not self.policy.path:
            raise ConfigError("policy.path is empty: pass a checkpoint folder, e.g. --policy.path=outputs/.../last")
        if self.live_scores.enabled and self.mode is not RolloutMode.EPISODES:
            raise ConfigError(f"--mode={self.mode} runs on: score its rollouts in so101-review, not with keys")
        if self.mode is RolloutMode.HIGHLIGHT and not self.record:
            raise ConfigError("--mode=highlight keeps what k asks for: drop --record=false")
        if self.live_scores.enabled and not self.record:
            raise ConfigError("--live_scores.enabled=true scores recorded rollouts: drop --record=false")
        if self.start_pose is StartPose.DEMONSTRATIONS and not self.policy.path:
            raise ConfigError(
                "--start_pose=demonstrations reads the training dataset the checkpoint names: pass --policy.path"
            )
        if self.record and not self.rig.cameras:
            raise ConfigError("the rig file has no cameras: an evaluation dataset needs the demonstrations' cameras")


def check_checkpoint(config: DeployConfig, console: Console) -> CheckedPolicy | None:
    """Read the checkpoint and check it against the rig (no weights yet); None for remote."""
    if config.engine.kind is EngineKind.REMOTE:
        return None
    from policies.contract import RigSpec

    checked = PolicyRunner(config.policy).check(RigSpec.from_rig_config(config.rig))
    units = degrees_or_refuse(checked.checkpoint, config.policy.units)
    if config.policy.blind_label is not None:  # nothing on screen says which policy runs
        console.print(f"policy {config.policy.blind_label} fits the rig", markup=False)
        return checked
    # One line however long the path (soft_wrap): a path broken by an inserted newline cannot be copied.
    console.print(f"checkpoint {config.policy.path}: {checked.describe()} — fits the rig", markup=False, soft_wrap=True)
    console.print(f"joint units: {units.describe('--policy.units')}", markup=False)
    for note in checked.contract.notes:
        console.print(f"  note: {note}")
    return checked


def rollout_start(config: DeployConfig, console: Console) -> DemonstrationStart | None:
    """Where the rollouts start (None: where the arms are), found before any weight loads."""
    if config.start_pose is StartPose.HERE:
        return None
    start = demonstrations_start(Path(config.policy.path))
    console.print(start.describe(), markup=False, highlight=False, soft_wrap=True)
    return start


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
        config = parse_command(DeployConfig, argv, old_spellings=OLD_SPELLINGS)
        return _deploy(config, Console(), stops)  # a PolicyError is the shell's one error line, exit 1

    return run_command(body, stops, argv)


def _deploy(config: DeployConfig, console: Console, stops: StopSignals) -> int:
    checked = check_checkpoint(config, console)
    start = rollout_start(config, console)
    writer: Any = NoDataset()
    opened = None
    if config.record:
        writer = dataset_writer(config.dataset, config.rig, intervention=config.correction.enabled)
        # Before the weights load: the writer process forks while no thread runs yet (see DatasetWriter).
        opened = writer.open()
        console.print(describe_open(config.dataset.repo_id, opened))
    try:
        predictor = load_predictor(config, checked, console)
        highlights = highlights_for(config.mode, config.highlight, config.rig.fps)
        with (
            rig_ports(config.rig) as found,
            stops.rig(BimanualRig(config.rig, found.ports)) as rig,
            keys_and_pedal(config.correction) as keys,
            closing(policy_source(_policy_plan(config), predictor, rig, console)) as policy,
        ):
            rules = EpisodeRules(
                QualityGates(on_fail=GateAction.KEEP),  # a rollout is evidence about the policy: only marked
                GestureConfig(enabled=False),
                scorer=LiveScorer(config.live_scores, config.dataset.folder(), on_event=say(console)),
                end_when_disengaged=config.correction.record is CorrectionRecording.CORRECTIONS_ONLY,
                highlights=highlights,
            )
            plan = RunPlan(
                rules,
                noun="rollout",
                failures={InferenceError: POLICY_FAILED},
                status_extra=partial(status_text, policy, highlights=highlights),
            )
            rollout_for = partial(rollout_source, policy, rig, config.correction, console, config.mode, start)
            session = session_for(config.mode, config.session)
            episodes = episode_writer(writer, highlights, rig, found, config.dataset.repo_id, opened, plan)
            run = RecordingRun(rig, episodes, session, plan, rollout_for, console, keys)
            outcome = run.run(stops)
    finally:
        removed = opened is not None and close_dataset(writer, opened, stops)  # a new dataset left empty: gone
    report(outcome, policy, writer, console, record=config.record, folder=config.dataset.folder(), removed=removed)
    if config.record and upload_if_asked(config.dataset, stops, removed):
        console.print(f"uploaded to the hub as {config.dataset.repo_id}", markup=False)
    return 1 if outcome.reason.failed or outcome.session.save_failure is not None else 0


def _policy_plan(config: DeployConfig) -> PolicyPlan:
    return PolicyPlan(config.rig, config.engine, config.remote, config.session.task)


if __name__ == "__main__":
    sys.exit(main())
