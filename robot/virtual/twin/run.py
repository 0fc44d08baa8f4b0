"""so101-fit's run: read the recording, fit each arm, check it on held-out episodes, report, and write if asked."""

import json
import time
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn

from robot.setup.rig_file import write_rig_section
from robot.shell.errors import UsageError
from robot.virtual.config import VirtualRigConfig
from robot.virtual.servo_params import FITTED_KEYS, ServoParams
from robot.virtual.servo_table import arm_params, arm_supply_v, write_arm_tables
from robot.virtual.twin.fidelity import emulate, fidelity
from robot.virtual.twin.fit import TwinFit, fit_arm
from robot.virtual.twin.options import FitCommandConfig
from robot.virtual.twin.plot import plot_episode
from robot.virtual.twin.recording import ArmRecording, TwinRecordingError, read_arm_recordings
from robot.virtual.twin.report import print_fidelity


def run_fit(config: FitCommandConfig, rig_path: Path | None, console: Console) -> int:
    """Fit each arm the recording holds, report before and after on the held-out episodes, write if asked.

    Raises:
        TwinRecordingError: the recording cannot be fitted (nothing is written).
        UsageError: --write without a rig file of the person's own.
    """
    virtual = config.rig.virtual or VirtualRigConfig()
    if config.write:
        _check_writable(config, rig_path)
    root = Path(str(config.dataset.root)).expanduser()  # never None: FitCommandConfig refuses that
    fit_set, held = _split(root, config)
    arms = read_arm_recordings(root, (*fit_set, *held), config.joint_map, config.dataset.units)
    entries, report = {}, {}
    for recording in arms:
        train, check = recording.only(fit_set), recording.only(held)
        before = arm_params(virtual.servo_table, recording.arm)
        before_v = arm_supply_v(virtual.servo_table, recording.arm, virtual.follower_supply_v)
        console.print(
            f"[bold]{recording.arm}[/bold]: {root}, fitting on episodes {_text(fit_set)} ({train.frames} frames"
            f" at {recording.fps:g} fps), checking on {_text(held)}; {recording.units_note}",
            highlight=False,
            soft_wrap=True,
        )
        for joint, why in recording.skipped.items():
            console.print(f"  {joint}: not fitted, {why}", highlight=False, soft_wrap=True)
        started = time.monotonic()
        fitted = _fit(train, before, before_v, config.evaluations)
        console.print(
            f"  fitted in {time.monotonic() - started:.0f} s, {fitted.evaluations} evaluations; cost"
            f" {fitted.cost_before:.3f} -> {fitted.cost_after:.3f}; supply {fitted.supply_v:.1f} V",
            highlight=False,
            soft_wrap=True,
        )
        emulated_before = emulate(check, before.at_supply(before_v))
        emulated_after = emulate(check, fitted.arm_params)
        was, now = fidelity(check, emulated_before), fidelity(check, emulated_after)
        print_fidelity(console, recording.arm, was, now)
        plot = config.output_dir / f"{recording.arm}_heldout.png"
        plot_episode(check, emulated_before[0], emulated_after[0], plot)
        console.print(f"  plot of held-out episode {held[0]}: {plot}", highlight=False, soft_wrap=True)
        entries[recording.arm] = _entry(train, check, fitted, now, was, config.joint_map)
        report[recording.arm] = {"before": was, "after": now} | entries[recording.arm]
    config.output_dir.mkdir(parents=True, exist_ok=True)
    (config.output_dir / "fit_report.json").write_text(json.dumps(report, indent=2, default=float) + "\n")
    console.print(f"report: {config.output_dir / 'fit_report.json'}", highlight=False, soft_wrap=True)
    if config.write and rig_path is not None:  # _check_writable refused --write without a rig file
        _write(config, rig_path, virtual, entries, console)
    else:
        console.print(
            f"nothing written; to use it: add --write=true{_rig_hint(rig_path)}", highlight=False, soft_wrap=True
        )
    return 0


def _check_writable(config: FitCommandConfig, rig_path: Path | None) -> None:
    """--write needs a rig file of the person's own, with a virtual section: refused before any fitting."""
    if rig_path is None:
        raise UsageError(
            "--write=true stores the fit in a rig file, and none was given (the default is the repository's own"
            " hardware_configs/virtual.yaml). Next: cp hardware_configs/virtual.yaml my_twin.yaml, then add"
            " --config_path=my_twin.yaml"
        )
    if config.rig.virtual is None:
        raise UsageError(
            f"--write=true: {rig_path} describes real arms (no `virtual:` section), and the fit is for the virtual"
            " rig. Next: cp hardware_configs/virtual.yaml my_twin.yaml, then --config_path=my_twin.yaml"
        )


def _split(root: Path, config: FitCommandConfig) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(episodes to fit on, episodes to check on)."""
    chosen = config.dataset.episodes
    if not chosen:
        from teleop.dataset.errors import UnreadableDatasetError
        from teleop.dataset.reader import open_reader

        try:
            chosen = tuple(entry.index for entry in open_reader(root, videos=False).episodes)
        except UnreadableDatasetError as e:
            raise TwinRecordingError(str(e)) from e
    held = config.validate.episodes or chosen[-1:]
    fit_set = tuple(e for e in dict.fromkeys(chosen) if e not in held)
    if not fit_set:
        raise TwinRecordingError(
            f"{root}: no episode left to fit on (episodes {_text(chosen)}, held out {_text(held)}): the fit needs"
            f" one episode and the check another. Next: choose more, e.g. --dataset.episodes=all"
        )
    return fit_set, tuple(dict.fromkeys(held))


def _fit(train: ArmRecording, before: ServoParams, supply_v: float, evaluations: int) -> TwinFit:
    joints = len(train.trajectories[0][0][0]) - len(train.skipped)
    total = evaluations + 2 + joints * max(12, evaluations // 3) + 4 * (joints + 1)  # Nelder-Mead may overshoot
    columns = (TextColumn("  {task.description}"), BarColumn(), TextColumn("{task.completed:.0f} evaluations"))
    with Progress(*columns, transient=True) as progress:
        task = progress.add_task(f"fitting {train.arm}", total=total)

        def step(stage: str, n: int, cost: float) -> None:
            progress.update(task, completed=n, description=f"fitting {train.arm}: {stage}, cost {cost:.3f}")

        return fit_arm(train, before, supply_v, evaluations, step)


def _entry(
    train: ArmRecording, check: ArmRecording, fitted: TwinFit, now: dict, was: dict, joint_map: str
) -> dict[str, object]:
    """One arm's table, as stored: its rows, supply, where it came from and how well it fits."""
    rows = {k: v for k, v in asdict(fitted.params).items() if k in FITTED_KEYS}
    held_out = {
        joint: {
            "error_ratio": row["error_ratio"],
            "error_ratio_before": was[joint]["error_ratio"],
            "lag_frames_real": row["real"]["lag_frames"],
            "lag_frames_emulated": row["emulated"]["lag_frames"],
            "targets": row["targets"],
        }
        for joint, row in now.items()
    }
    return {
        "params": rows,
        "supply_v": fitted.supply_v,
        "fitted_on": {
            "recording": str(train.root),
            "episodes": list(train.episodes),
            "validated_on": list(check.episodes),
            "joint_map": joint_map or None,
            "frames": train.frames,
            "units": train.units_note,
            "joints_fitted": list(fitted.joints),
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
        },
        "fit_error": {"cost_before": fitted.cost_before, "cost_after": fitted.cost_after, "held_out": held_out},
    }


def _write(
    config: FitCommandConfig, rig_path: Path, virtual: VirtualRigConfig, entries: dict, console: Console
) -> None:
    """Each arm's table into the rig's servo table file; the rig file names it if it did not."""
    table = virtual.servo_table or rig_path.with_name(f"{rig_path.stem}.servo.json")
    table = Path(table).expanduser().resolve()
    write_arm_tables(table, entries)
    if virtual.servo_table is None or Path(virtual.servo_table).expanduser().resolve() != table:
        write_rig_section(rig_path, "virtual", replace(virtual, servo_table=table))
    console.print(
        f"wrote {', '.join(entries)} into {table} (virtual.servo_table of {rig_path})", highlight=False, soft_wrap=True
    )


def _rig_hint(rig_path: Path | None) -> str:
    return f" --config_path={rig_path}" if rig_path else " --config_path=<your copy of hardware_configs/virtual.yaml>"


def _text(episodes: tuple[int, ...]) -> str:
    return ",".join(str(e) for e in episodes)
