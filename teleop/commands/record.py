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
from pathlib import Path

from rich.console import Console
from rich.table import Table

from robot.cli import parse_command, run_command
from robot.config import RigConfig
from robot.control_loop import ControlLoop, Step
from robot.errors import ConfigError
from robot.rig import BimanualRig
from robot.rig_ports import rig_ports
from robot.signals import StopSignals
from teleop.dataset.results import OpenReport
from teleop.dataset.writer_process import DatasetWriter, WriterSpec
from teleop.gesture import GestureConfig, GestureDetector
from teleop.keys import HINTS, KeyReader
from teleop.leader_source import LeaderSource
from teleop.quality import QualityCard, QualityGates
from teleop.session import RecordingSession, SessionConfig
from teleop.session_run import run_session
from teleop.status_line import StatusLine

CODECS = ("libsvtav1", "h264")
OPERATOR_CHOICES = ("cloth_fold", "idle")


@dataclass(frozen=True)
class DatasetConfig:
    """Where and how the dataset is written."""

    repo_id: str = "local/so101_fold"  # LeRobot dataset id, "<user>/<name>"
    root: Path | None = None  # the dataset folder; default $HF_LEROBOT_HOME/<repo_id>
    vcodec: str = "libsvtav1"  # video codec: libsvtav1 (LeRobot's default, smaller) or h264 (less CPU)
    resume: bool = False  # add episodes to an existing dataset (its fps, cameras and features must match)
    push_to_hub: bool = False  # upload to the Hugging Face Hub when done (needs a login and a network)

    def __post_init__(self) -> None:
        if self.repo_id.count("/") != 1 or not all(self.repo_id.split("/")):
            raise ConfigError(f"dataset.repo_id={self.repo_id!r}: expected '<user>/<name>', e.g. me/fold_cloth")
        if self.vcodec not in CODECS:
            raise ConfigError(f"dataset.vcodec={self.vcodec!r}: expected one of {', '.join(CODECS)}")

    def folder(self) -> Path:
        """The dataset's folder on disk."""
        if self.root is not None:
            return Path(self.root)
        from lerobot.utils.constants import HF_LEROBOT_HOME

        return HF_LEROBOT_HOME / self.repo_id


@dataclass(frozen=True)
class RecordConfig:
    """Options of so101-record (the rig comes from --config_path)."""

    rig: RigConfig = field(default_factory=RigConfig)
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    session: SessionConfig = field(default_factory=SessionConfig)
    gates: QualityGates = field(default_factory=QualityGates)
    gesture: GestureConfig = field(default_factory=GestureConfig)
    # Control rate, Hz, for this run only; default the rig file's `fps` (every consumer reads it from the rig)
    fps: int | None = None
    # Virtual rig only: what the scripted operator's hands do on the leaders (cloth_fold or idle)
    virtual_operator: str = "cloth_fold"

    def __post_init__(self) -> None:
        if self.virtual_operator not in OPERATOR_CHOICES:
            raise ConfigError(f"virtual_operator={self.virtual_operator!r}: expected one of {OPERATOR_CHOICES}")
        if not self.rig.cameras:
            raise ConfigError("the rig file has no cameras: a dataset needs left_wrist, right_wrist and overhead")


def describe_open(repo_id: str, report: OpenReport) -> str:
    """One line on what opening the dataset found (and repaired)."""
    if report.created:
        line = f"new dataset {repo_id} at {report.root}"
    else:
        line = f"dataset {repo_id} at {report.root}: {report.episodes} episodes ({report.frames} frames) so far"
    repair = report.repair
    if repair.rolled_back_episode is not None:
        line += f"; an interrupted save of episode {repair.rolled_back_episode} was rolled back"
    if repair.removed:
        line += f"; removed {len(repair.removed)} leftover file(s) of an interrupted run"
    return line


def describe_saves(session: RecordingSession, before: int, folder: Path, noun: str = "episode") -> list[str]:
    """The summary's lines on what this run saved: each episode not saved, then the durable count.

    `before`: episodes the dataset held when it was opened (a resumed one's). The count is that of
    saves that returned, so `before` + it is what LeRobotDataset loads from `folder`.
    """
    lines = [f"{noun} {unsaved.index} is NOT saved: {unsaved.reason}" for unsaved in session.unsaved]
    line = f"{session.recorded} {noun}(s) saved to {folder} in this run"
    if before:
        line += f"; with the {before} from before, the dataset holds {before + session.recorded}"
    return [*lines, line]


def card_table(cards: list[QualityCard]) -> Table:
    """The quality cards as a table."""
    table = Table(title="episode quality")
    columns = ("ep", "frames", "Hz", "jitter p99 ms", "skew p99 ms", "lost", "idle", "limits", "°C", "verdict")
    for column in columns:
        table.add_column(column)
    for c in cards:
        dropped = sum(c.dropped_frames.values()) + c.writer_dropped
        verdict = c.verdict if not c.failed_gates else f"{c.verdict}: {'; '.join(c.failed_gates)}"
        table.add_row(
            str(c.episode),
            str(c.frames),
            f"{c.achieved_fps:.2f}",
            f"{c.period_error_p99_ms:.2f}",
            "-" if c.skew_p99_ms is None else f"{c.skew_p99_ms:.1f}",
            str(dropped),
            f"{c.idle_fraction:.0%}",
            str(c.limit_hits),
            f"{c.peak_temperature_c:.0f}",
            verdict,
        )
    return table


def main(argv: list[str] | None = None) -> int:
    """Entry point of so101-record."""
    stops = StopSignals()  # SIGINT, SIGTERM, SIGHUP: the loop stops, a save in progress completes

    def body() -> int:
        config = parse_command(RecordConfig, argv)
        console = Console()
        folder = config.dataset.folder()
        cameras = tuple((c.name, c.height, c.width) for c in config.rig.cameras)
        writer = DatasetWriter(
            WriterSpec(
                root=folder,
                repo_id=config.dataset.repo_id,
                fps=config.rig.fps,
                cameras=cameras,
                vcodec=config.dataset.vcodec,
                resume=config.dataset.resume,
            )
        )
        report = writer.open()
        console.print(describe_open(config.dataset.repo_id, report))
        stopped_by = "done"
        safety_stop: str | None = None
        try:
            with rig_ports(config.rig) as found:
                if found.control is not None and config.virtual_operator != "idle":
                    with found.client() as client:
                        client.play(config.virtual_operator, loop=True)
                with stops.rig(BimanualRig(config.rig, found.ports)) as rig, KeyReader() as keys:
                    source = LeaderSource(rig)
                    status = StatusLine(rig, console, hints=HINTS if keys.enabled else "Ctrl-C: stop")
                    session = RecordingSession(
                        rig,
                        writer,
                        config.session,
                        config.gates,
                        GestureDetector(config.gesture),
                        keys=keys.poll,
                        engaged=lambda: source.engaged,
                        on_card=lambda card: console.print(card_table([card])),
                        on_event=console.print,
                    )

                    class StatusText:
                        def on_step(self, step: Step) -> None:
                            status.extra = session.status(step.tick.start_s)

                    loop = ControlLoop(
                        rig,
                        source,
                        hooks=[session, StatusText(), status],
                        realtime_priority=config.rig.realtime_priority,
                    )
                    session.stop_loop = loop.stop
                    stopped_by = run_session(loop, session, status, stops=stops)
                    safety_stop = rig.stop_reason
                    with stops.finishing():
                        session.wait_for_save()
        finally:
            with stops.finishing():  # a second signal leaves a save in progress to the writer process
                writer.close()
        console.print(card_table(session.cards))
        if session.save_failure is not None and stopped_by == "done":
            stopped_by = f"the failed save of episode {session.save_failure.index}"
        console.print(f"stopped by {stopped_by}", markup=False)
        for line in describe_saves(session, report.episodes, folder):
            console.print(line, markup=False)  # error texts may hold brackets
        console.print(
            f"train with: lerobot-train --dataset.repo_id={config.dataset.repo_id} --dataset.root={folder} ..."
        )
        if config.dataset.push_to_hub and stops.signum is None:  # a stop signal means no upload either
            from lerobot.datasets.lerobot_dataset import LeRobotDataset

            LeRobotDataset(config.dataset.repo_id, root=folder).push_to_hub()
        # Fewer episodes than asked for (a failed save), or the safety layer ended the session: not a success.
        return 1 if session.save_failure is not None or safety_stop is not None else 0

    return run_command(body, stops)


if __name__ == "__main__":
    sys.exit(main())
