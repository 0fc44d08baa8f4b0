r"""so101-replay: dry runs of a dataset's actions, or of a policy on its recorded observations, with a report.

The actions go through the same control loop and safety layer as teleop and deploy, without moving
anything (unless asked to), and the report says what would have happened.

    so101-replay --dataset.root=outputs/datasets/fold                 # episode 0 on dry arms, as fast as possible
    so101-replay --dataset.root=outputs/datasets/fold --dataset.episodes=all --target=virtual   # the virtual rig
    so101-replay --dataset.repo_id=me/fold --dataset.episodes=0-2 --pace=realtime
    so101-replay --dataset.root=... --policy.path=outputs/train/act/checkpoints/last/pretrained_model
    so101-replay --dataset.root=... --policy.path=recorded            # sanity check: ~0 error expected
    so101-replay --config_path=hardware_configs/so101_bimanual.yaml --dataset.root=... --target=live   # REAL ARMS MOVE

Targets: `dry` (default) arms with no bus: every command goes through the safety layer and LeRobot's
position normalisation and is logged, nothing is sent; `virtual`: the virtual rig's emulated
followers (ease-in to each episode's first action, then real time); `live`: the arms of the
rig file, eased in from where they are, `e` e-stops, `q` stops, Ctrl-C stops safely. The report
(report.html, self-contained, and report.json) goes to --report.output_dir (default outputs/replay/<dataset>-<time>).

A dataset that does not fit the rig (one arm, other joint names, another fps) is refused with the
difference named; --joint_map=left|right|'{json}' and --fps bridge it explicitly. The joints' units
are detected from the recording (degrees, or LeRobot's percent of range in datasets recorded with
use_degrees=False) and stated; live arms replay degrees only (--dataset.units=degrees says so).
Ctrl-C, SIGTERM and SIGHUP stop the replay at the next tick (a second Ctrl-C or SIGTERM within 3 s
e-stops the followers and exits at once, without a report). Exit codes: 0 done, 1 an error (nothing
moved after it), 2 a bad option, 128+n stopped by signal n: 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP (the
report covers what ran).
"""

import shlex
import signal
import sys
import time
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from policies.engines.config import EngineConfig, EngineKind
from policies.replay.analysis import Thresholds
from policies.replay.dataset import ReplayDataset, locate, open_dataset
from policies.replay.errors import ReplayOptionError
from policies.replay.fit import fit_dataset
from policies.replay.pacing import Pace
from policies.replay.plan import ReplayPlan, Target
from policies.replay.policy import open_policy
from policies.replay.report import build_report, write_report
from policies.replay.report_model import Report
from policies.replay.run import Replayer
from policies.runner import PolicyOptions
from robot.cli import parse_command, run_command
from robot.config import REPO_ROOT, RigConfig
from robot.config_checks import reject_non_finite
from robot.errors import ConfigError
from robot.joint_units import JointUnits, UnitsVerdict, resolve_units
from robot.shell.exit_codes import Exit, stopped_by
from robot.shell.old_spellings import renamed
from robot.shell.say import say_error
from robot.signals import StopSignals

OLD_SPELLINGS = {"--live": "--target=live", "--fast": "--pace=fast"}  # accepted until the next release


@dataclass(frozen=True)
class DatasetSelection:
    """Which dataset and episodes to replay."""

    repo_id: str = ""  # hub id "<user>/<name>" (found under $HF_LEROBOT_HOME, or downloaded when online)
    root: Path | None = None  # the dataset folder on disk (takes precedence over repo_id)
    episodes: tuple[int, ...] = (0,)  # e.g. 0,2,5, 1-3 or all (robot/shell/lists.py); empty: all
    # The joints' units: auto (detected from the recording), degrees, or percent (LeRobot's -100..100 of range)
    units: JointUnits = JointUnits.AUTO


@dataclass(frozen=True)
class ReportOptions:
    """Where the report goes and what it shows."""

    output_dir: Path | None = None  # default: outputs/replay/<dataset name>-<yyyymmdd-hhmmss>
    stills: int = 4  # overhead stills per episode (sketch of the commanded pose beside the recording)
    thresholds: Thresholds = field(default_factory=Thresholds)


class PaceChoice(StrEnum):
    """`--pace`: a Pace, or auto (fast on dry arms, real time on any rig)."""

    AUTO = "auto"
    REALTIME = Pace.REALTIME.value
    FAST = Pace.FAST.value


@dataclass(frozen=True)
class ReplayCommandConfig:
    """Options of so101-replay (the rig comes from --config_path; the virtual rig by default)."""

    rig: RigConfig = field(default_factory=RigConfig)
    dataset: DatasetSelection = field(default_factory=DatasetSelection)
    # Where the actions go: dry (no bus), virtual (the virtual rig) or live (the rig file's arms; they move).
    target: Target = Target.DRY
    # realtime (the replay rate) or fast (as fast as possible); auto: fast on dry arms, else realtime.
    pace: PaceChoice = PaceChoice.AUTO
    # Replay rate, Hz; default the dataset's fps (which must then equal the rig file's `fps`).
    fps: int | None = None
    # How dataset columns drive rig joints: left, right (a single-arm dataset) or a JSON object.
    joint_map: str = ""
    # The checkpoint (so101-deploy's options), or --policy.path=recorded: the dataset's own actions through
    # the engine, a check that should score ~0 error. Empty: replay the actions.
    policy: PolicyOptions = field(default_factory=PolicyOptions)
    # The inference engine: sync by default (works at either pace; so101-deploy defaults to async)
    engine: EngineConfig = field(default_factory=lambda: EngineConfig(kind=EngineKind.SYNC))
    # Task text given to the policy; empty: each episode's recorded task
    task: str = ""
    report: ReportOptions = field(default_factory=ReportOptions)

    def __post_init__(self) -> None:
        reject_non_finite(self, "")
        if self.target == Target.LIVE and self.pace == PaceChoice.FAST:
            raise ConfigError("pace=fast on live arms is refused: real arms replay in real time only")
        if self.report.stills < 0:
            raise ConfigError(f"report.stills={self.report.stills}: must be >= 0")

    @property
    def resolved_pace(self) -> Pace:
        """The pace, with auto resolved."""
        if self.pace == PaceChoice.AUTO:
            return Pace.FAST if self.target == Target.DRY else Pace.REALTIME
        return Pace(self.pace.value)


def chosen_episodes(chosen: tuple[int, ...], dataset: ReplayDataset) -> tuple[int, ...]:
    """The episodes to replay: `chosen` in order, without repeats; every episode when empty (`all`).

    Raises:
        ReplayOptionError: an episode the dataset does not hold (naming the range it has).
    """
    if not chosen:
        return tuple(e.index for e in dataset.episodes)
    for index in chosen:
        dataset.episode(index)  # names the range when missing
    return tuple(dict.fromkeys(chosen))


def summary_table(report: Report) -> Table:
    """One row per episode: what the report found."""
    table = Table(title="replay")
    for column in (
        "ep",
        "frames",
        "limit hits",
        "clamps",
        "spikes",
        "gripper",
        "misses",
        "×RT",
        "track max",
        "policy err",
    ):
        table.add_column(column)
    for item in report.episodes:
        f = item.findings
        tracking = f"{f.tracking.max_abs[f.tracking.worst_joint]:.2f}° {f.tracking.worst_joint}" if f.tracking else "-"
        policy = f"{f.policy.body_mean_abs_deg:.2f}°" if f.policy and f.policy.body_mean_abs_deg is not None else "-"
        table.add_row(
            str(f.episode),
            f"{f.frames_replayed}/{f.frames_recorded}",
            str(len(f.limit_hits)),
            str(len(f.safety_events)),
            str(len(f.spikes)),
            str(len(f.gripper_events)),
            "-" if f.deadline_misses is None else str(len(f.deadline_misses)),
            f"{f.replay_speed:.1f}",
            tracking,
            policy,
        )
    return table


def first_findings(report: Report, limit: int = 5) -> list[str]:
    """The first few limit hits and spikes, each with its frame and joint.

    A limit hit says where the limit clamped the request; the step and speed caps may then have
    sent less (the report's safety table has each intervention).
    """
    lines = []
    for item in report.episodes:
        f = item.findings
        lines += [
            f"episode {f.episode} frame {e.frame}: {e.joint} {'high' if e.requested > e.sent else 'low'} limit"
            f" (asked {e.requested:.2f}, clamped to {e.sent:.2f})"
            for e in f.limit_hits[:limit]
        ]
        lines += [
            f"episode {f.episode} frame {s.first_frame}: {s.joint} {s.quantity} spike, peak {s.peak:.0f}"
            for s in f.spikes[:limit]
        ]
    return lines


def _units(
    config: ReplayCommandConfig, dataset: ReplayDataset, episodes: tuple[int, ...], target: Target, args: list[str]
) -> UnitsVerdict:
    """The dataset's joint units (the follower readings are the evidence, else the actions).

    Raises:
        ReplayOptionError: live arms and units that are not degrees, or not known: the arms take degrees.
    """
    loaded = [dataset.load(index) for index in episodes]
    if dataset.state_names and all(e.states is not None for e in loaded):
        values, names = np.concatenate([e.states for e in loaded]), dataset.state_names
    else:
        values, names = np.concatenate([e.actions for e in loaded]), dataset.action_names
    verdict = resolve_units(config.dataset.units, values, names)
    if target is Target.LIVE and verdict.units != JointUnits.DEGREES:
        dry = shlex.join(["so101-replay", *[a for a in args if not a.startswith("--target")], "--target=dry"])
        raise ReplayOptionError(
            f"{dataset.root} holds joints in {verdict.describe()}, and the arms take degrees: replayed live they would"
            f" move by the wrong amounts. Next: look at it on dry arms first ({dry}); if the joints are in degrees"
            f" after all, say so with --dataset.units=degrees"
        )
    return verdict


def main(argv: list[str] | None = None) -> int:
    """Entry point of so101-replay."""
    args = renamed(sys.argv[1:] if argv is None else argv, OLD_SPELLINGS)
    stops = StopSignals()  # SIGINT, SIGTERM, SIGHUP: the loop stops at its next tick, the report is written

    def body() -> int:
        config = parse_command(ReplayCommandConfig, args)
        return _replay(config, Console(), args, stops)

    return run_command(body, stops, args)


def _replay(config: ReplayCommandConfig, console: Console, args: list[str], stops: StopSignals) -> int:
    target, pace = Target(config.target), config.resolved_pace
    if target is Target.VIRTUAL and not config.rig.is_virtual:
        raise ReplayOptionError(
            "target=virtual, but the rig file describes real arms. Next: drop --config_path for the virtual rig,"
            " or use --target=live to move the real arms"
        )
    folder = locate(config.dataset.repo_id or None, config.dataset.root)
    dataset = open_dataset(folder, config.dataset.repo_id or None, need_videos=config.policy.given)
    episodes = chosen_episodes(config.dataset.episodes, dataset)
    fit = fit_dataset(dataset, joint_map=config.joint_map, rig_fps=config.rig.fps, fps=config.fps)
    units = _units(config, dataset, episodes, target, args)
    plan = ReplayPlan(dataset, fit, episodes, target, pace, config.rig)
    policy = None
    if config.policy.given:
        policy = open_policy(config.policy, config.engine, dataset.cameras, fps=fit.fps, realtime=pace is Pace.REALTIME)
        console.print(f"policy: {policy.description}")
        for note in policy.notes:
            console.print(f"[yellow]{note}")
    if target is Target.LIVE:
        console.print("[bold red]live: the arms in the rig file will move.[/] e: e-stop, q: stop, Ctrl-C: stop safely")
    console.print(
        f"replaying {len(episodes)} episode(s) of {dataset.root} on {target} arms at {fit.fps:g} fps ({pace} pace)"
        + (f"; held joints: {', '.join(fit.held)}" if fit.held else "")
    )
    console.print(f"joint units: {units.describe()}", highlight=False)
    if dataset.missing_videos:
        lost = escape("; ".join(dataset.missing_videos[:3]))
        console.print(
            f"[yellow]{len(dataset.missing_videos)} video file(s) missing or unreadable[/]: not needed to replay the"
            f" actions; the report's stills show the commanded pose alone ({lost})",
            soft_wrap=True,
        )
    run = Replayer(plan, policy, task=config.task, prime=config.engine.prime, on_event=console.print, stops=stops).run()
    command = "so101-replay " + " ".join(shlex.quote(a) for a in args)
    with stops.finishing():  # a stop signal lets the report be written; a second one exits without it
        report = build_report(run, config.report.thresholds, stills=config.report.stills, command=command)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        out = config.report.output_dir or REPO_ROOT / "outputs" / "replay" / f"{dataset.root.name}-{stamp}"
        html_path, json_path = write_report(report, Path(out))
    console.print(summary_table(report))
    for line in first_findings(report):
        console.print(line)
    console.print(f"stopped by {run.stopped_by}; report: {html_path} (and {json_path.name})")
    for problem in report.problems:
        say_error(problem)
    if stops.exit_code is not None:
        return stops.exit_code
    if run.stopped_by == "Ctrl-C":
        return stopped_by(signal.SIGINT)
    return Exit.FAILED if report.problems else Exit.DONE


if __name__ == "__main__":
    sys.exit(main())
