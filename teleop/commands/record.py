r"""so101-record: teleoperated demonstrations into a LeRobot v3.0 dataset that survives crashes.

    so101-record --dataset.repo_id=me/fold_cloth --session.num_episodes=50            # the virtual rig
    so101-record --config_path=hardware_configs/so101_bimanual.yaml \\
        --dataset.repo_id=me/fold_cloth --session.episode_s=30 --session.reset_s=10
    so101-record --config_path=... --dataset.repo_id=me/fold_cloth --dataset.resume=true   # add episodes

Keys (plain terminal, SSH too): →/n next, ←/r re-record, space pause, q stop, e e-stop; or squeeze both
leader grippers for a second with the arms still to start or end an episode. Every saved episode is
durable at once: a crash loses at most the episode in progress, and the next run repairs and resumes.
After each episode a quality card is printed; an episode that fails the gates, or whose videos came out
short (its save is rolled back), is recorded again. The summary counts only episodes whose save
returned: what LeRobot loads from the folder; an episode whose save failed is named there.
Ctrl-C, SIGTERM and SIGHUP (a dropped SSH link) stop it safely: the episode in progress is discarded, a
save in progress completes, the followers exit per `rig.safety.on_exit`; a second Ctrl-C or SIGTERM within
3 s e-stops and exits at once (the writer finishes the save). Exit status: README, "Stopping".
The dataset trains with `lerobot-train --dataset.repo_id=me/fold_cloth --dataset.root=<folder>`.
"""

import sys
from dataclasses import dataclass, field

from rich.console import Console

from robot.cli import parse_command, run_command
from robot.config import RigConfig
from robot.errors import ConfigError
from robot.rig import BimanualRig
from robot.rig_ports import rig_ports
from robot.shell.old_spellings import RIG_RATE
from robot.signals import StopSignals
from robot.virtual.config import VirtualOperator
from teleop.dataset.writer_process import DatasetWriter
from teleop.dataset_options import DatasetConfig, close_dataset, dataset_writer, upload_if_asked
from teleop.gesture import GestureConfig
from teleop.keys import KeyReader
from teleop.leader_source import LeaderSource
from teleop.live_view.config import LiveViewConfig
from teleop.live_view.session import live_view_hooks
from teleop.quality import QualityGates
from teleop.recording_run import RecordingRun, RunOutcome, RunPlan
from teleop.run_report import card_table, describe_open, describe_saves, train_next_step
from teleop.session import SessionConfig
from teleop.session_links import EpisodeRules
from teleop.table_writer import table_writer

OLD_SPELLINGS = RIG_RATE  # --fps, now --rig.fps (robot/shell/old_spellings.py)


@dataclass(frozen=True)
class RecordConfig:
    """Options of so101-record (the rig comes from --config_path)."""

    rig: RigConfig = field(default_factory=RigConfig)
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    session: SessionConfig = field(default_factory=SessionConfig)
    gates: QualityGates = field(default_factory=QualityGates)
    gesture: GestureConfig = field(default_factory=GestureConfig)
    # A browser page with the cameras and the joint traces while recording (off by default)
    view: LiveViewConfig = field(default_factory=LiveViewConfig)
    # Virtual rig only: what the scripted operator's hands do on the leaders (fold_task: the table is
    # tidied per episode and each episode's card gets the cloth's ground truth)
    virtual_operator: VirtualOperator = VirtualOperator.FOLD_TASK

    def __post_init__(self) -> None:
        if not self.rig.cameras:
            raise ConfigError("the rig file has no cameras: a dataset needs left_wrist, right_wrist and overhead")


def main(argv: list[str] | None = None) -> int:
    """Entry point of so101-record: parse, open the dataset, record on the rig, report."""
    stops = StopSignals()  # SIGINT, SIGTERM, SIGHUP: the loop stops, a save in progress completes

    def body() -> int:
        config = parse_command(RecordConfig, argv, old_spellings=OLD_SPELLINGS)
        console = Console()
        writer = dataset_writer(config.dataset, config.rig)
        before = writer.open()
        console.print(describe_open(config.dataset.repo_id, before))
        try:
            outcome = _record(config, writer, console, stops, before.episodes)
        finally:
            removed = close_dataset(writer, before, stops)  # a new dataset left empty: gone
        _report(config, outcome, before.episodes, console, removed)
        if upload_if_asked(config.dataset, stops, removed):
            console.print(f"uploaded to the hub as {config.dataset.repo_id}", markup=False)
        # A safety stop, or fewer episodes than asked for (a failed save), is not a success.
        return 1 if outcome.reason.failed or outcome.session.save_failure is not None else 0

    return run_command(body, stops, argv)


def _record(
    config: RecordConfig, writer: DatasetWriter, console: Console, stops: StopSignals, first_index: int
) -> RunOutcome:
    with rig_ports(config.rig) as found, live_view_hooks(config.view, console.print) as view:
        plan = RunPlan(EpisodeRules(config.gates, config.gesture), hooks=tuple(view))
        found.start_operator(config.virtual_operator)
        with stops.rig(BimanualRig(config.rig, found.ports)) as rig, KeyReader() as keys:
            on_table = table_writer(
                writer,
                rig,
                found,
                dataset_key=config.dataset.repo_id,
                operator=config.virtual_operator == VirtualOperator.FOLD_TASK,
                first_index=first_index,
            )
            run = RecordingRun(rig, on_table, config.session, plan, lambda session: LeaderSource(rig), console, keys)
            return run.run(stops)


def _report(config: RecordConfig, outcome: RunOutcome, before: int, console: Console, removed: bool) -> None:
    folder = config.dataset.folder()
    console.print(card_table(outcome.session.cards))
    console.print(f"stopped by {outcome.reason}", markup=False)
    for line in describe_saves(outcome.session, before, folder):
        console.print(line, markup=False)  # error texts may hold brackets
    if removed:
        console.print(f"no episode was saved: the new dataset at {folder} was removed", markup=False)
    else:
        console.print(train_next_step(config.dataset.repo_id, folder), markup=False, highlight=False, soft_wrap=True)


if __name__ == "__main__":
    sys.exit(main())
