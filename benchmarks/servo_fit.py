"""so101-fit on real SO-101 follower recordings, one recording at a time: the held-out fidelity per recording.

    .venv/bin/python -m benchmarks.servo_fit --recordings DIR     # fit each on all but its last episode
    .venv/bin/python -m benchmarks.servo_fit --validate-only      # what make bench runs: the committed table, no fit
    .venv/bin/python -m benchmarks.servo_fit                      # no recordings: says so and skips

Recordings are read from `--recordings`, else `$SO101_SERVO_RECORDINGS`, else outputs/servo_recordings/:
each a LeRobot v3.0 dataset folder (a single-arm one is read as the left arm, `--joint_map=left`). For
each arm of each recording, the fit so101-fit runs (`robot/virtual/twin/`) from the committed table
(`robot/virtual/servo_fitted.json`) on every episode but the last, then the last is replayed through
the emulated arm under the committed table and under the fitted one: per joint, lag, mean tracking
error |state[t+1] - action[t]| against the real arm's (the goal: a ratio within 0.8-1.2, the lag
within a frame) and gravity sag. The report goes to `--out` (its `summary` rows into make bench's
table), one plot per arm beside it. The recordings are not committed (most carry no licence);
benchmarks/README.md names them and where they come from.
"""

import argparse
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
from rich.console import Console

from robot.joint_map import SINGLE_ARM_NAMES
from robot.joints import JOINT_NAMES
from robot.virtual.servo_params import FITTED_KEYS, load_fitted
from robot.virtual.twin.fidelity import SAG_JOINTS, STILL_DEG, emulate, fidelity
from robot.virtual.twin.fit import fit_arm
from robot.virtual.twin.plot import plot_episode
from robot.virtual.twin.recording import ArmRecording, read_arm_recordings
from robot.virtual.twin.report import print_fidelity
from teleop.dataset.reader import open_reader

RECORDINGS_ENV = "SO101_SERVO_RECORDINGS"
DEFAULT_RECORDINGS = Path("outputs/servo_recordings")
RATED_SUPPLY_V = 12.0  # the committed table's supply, the kit's 12 V adapter


def find_recordings(folder: Path | None) -> list[Path]:
    """Recording folders under `folder` (itself, or its subfolders), sorted by name."""
    if folder is None or not folder.is_dir():
        return []
    if (folder / "meta" / "info.json").is_file():
        return [folder]
    return sorted(p for p in folder.iterdir() if (p / "meta" / "info.json").is_file())


def recordings_folder(given: Path | None) -> Path:
    """`--recordings`, else `$SO101_SERVO_RECORDINGS`, else outputs/servo_recordings."""
    if given is not None:
        return given
    return Path(os.environ[RECORDINGS_ENV]) if os.environ.get(RECORDINGS_ENV) else DEFAULT_RECORDINGS


def bench_recording(folder: Path, validate_only: bool, evaluations: int, plots: Path, console: Console) -> dict:
    """Every arm of one recording: fitted on all episodes but the last (unless `validate_only`), checked on the last."""
    reader = open_reader(folder, videos=False)
    episodes = tuple(entry.index for entry in reader.episodes)
    joint_map = "left" if set(reader.action_names or ()) == set(SINGLE_ARM_NAMES) else ""
    committed = load_fitted()
    result = {}
    for recording in read_arm_recordings(folder, episodes, joint_map):
        train, check = recording.only(episodes[:-1]), recording.only(episodes[-1:])
        console.print(
            f"[bold]{folder.name}[/bold] {recording.arm}: {len(episodes)} episodes, {recording.frames} frames;"
            f" {recording.units_note}; not fitted: {recording.skipped or 'none'}",
            highlight=False,
        )
        started = time.monotonic()
        after = committed.at_supply(RATED_SUPPLY_V)
        entry: dict = {"episodes_fitted": len(train.episodes), "held_out_episode": check.episodes[0]}
        if not validate_only:
            fitted = fit_arm(train, committed, RATED_SUPPLY_V, evaluations)
            after = fitted.arm_params
            rows = {k: v for k, v in asdict(fitted.params).items() if k in FITTED_KEYS}
            entry |= {"fit_s": time.monotonic() - started, "supply_v": fitted.supply_v, "cost": fitted.cost_after}
            entry |= {"params": rows}
        emulated_before = emulate(check, committed.at_supply(RATED_SUPPLY_V))
        emulated_after = emulate(check, after)
        was, now = fidelity(check, emulated_before), fidelity(check, emulated_after)
        print_fidelity(console, recording.arm, was, now)
        plot_episode(
            check, emulated_before[0], emulated_after[0], plots / f"servo_fit_{folder.name}_{recording.arm}.png"
        )
        holds = {joint: hold_offsets(recording, joint) for joint in SAG_JOINTS}
        for joint, row in holds.items():
            console.print(
                f"  {joint}: {row['holds']} holds of 40+ frames; state - goal {row['early_deg']:+.2f} deg after"
                f" 10-20 frames, {row['late_deg']:+.2f} at their end (an integral term would take it to 0)",
                highlight=False,
            )
        result[recording.arm] = entry | {"committed": was, "fitted": now, "hold_offsets": holds}
    return result


def hold_offsets(recording: ArmRecording, joint: str, min_frames: int = 40) -> dict[str, float]:
    """Whether an integral term acts: state - goal early in each long hold (frames 10-20) and at its end.

    A loop with integral action drives the offset a load leaves toward zero while the goal holds;
    LeRobot writes I_Coefficient 0, and a recording shows whether the firmware adds one of its own.
    """
    i = JOINT_NAMES.index(joint)
    early, late = [], []
    for state, action in recording.trajectories:
        goal, t = action[:, i], 0
        while t < len(goal):
            end = t
            while end + 1 < len(goal) and abs(goal[end + 1] - goal[t]) < STILL_DEG:
                end += 1
            if end - t + 1 >= min_frames:
                early.append(float(np.mean(state[t + 10 : t + 20, i] - goal[t + 10 : t + 20])))
                late.append(float(np.mean(state[end - 9 : end + 1, i] - goal[end - 9 : end + 1])))
            t = end + 1
    return {
        "holds": len(early),
        "early_deg": float(np.mean(early)) if early else float("nan"),
        "late_deg": float(np.mean(late)) if late else float("nan"),
    }


def summary_rows(report: dict) -> list[dict]:
    """make bench's rows: per recording, arm and joint, the held-out tracking error, emulated and real."""
    rows = []
    for name, arms in report.items():
        for arm, entry in arms.items():
            for joint, row in entry["fitted"].items():
                rows.append(
                    {
                        "benchmark": "servo_fit",
                        "metric": f"{joint} mean tracking error, {name} {arm} (held-out episode)",
                        "unit": "deg",
                        "ours": row["emulated"]["err_mean_deg"],
                        "anchor": row["real"]["err_mean_deg"],
                        "anchor_name": "the real SO-101 follower",
                        "higher_is_better": False,
                        "target": "within 0.8-1.2 of the real arm's; lag within 1 frame",
                    }
                )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--recordings", type=Path, default=None, help=f"default ${RECORDINGS_ENV}, else {DEFAULT_RECORDINGS}"
    )
    parser.add_argument(
        "--validate-only", action="store_true", help="no fit: the committed table's fidelity (make bench)"
    )
    parser.add_argument(
        "--evaluations", type=int, default=240, help="each arm stage's budget (so101-fit's --evaluations)"
    )
    parser.add_argument("--out", type=Path, default=Path("outputs/bench/servo_fit.json"), help="the report (JSON)")
    args = parser.parse_args(argv)
    folder = recordings_folder(args.recordings)
    folders = find_recordings(folder)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if not folders:
        why = (
            f"no LeRobot recordings under {folder} (--recordings DIR or ${RECORDINGS_ENV}, each a folder with meta/"
            " and data/; the real SO-101 recordings are not committed; benchmarks/README.md names them)"
        )
        print(f"servo_fit: skipped: {why}")
        # A report that says so, with no rows: make bench's table must not show an older run's.
        args.out.write_text(json.dumps({"skipped": why, "summary": []}, indent=2) + "\n")
        return 0
    console = Console(width=160)
    report = {
        f.name: bench_recording(f, args.validate_only, args.evaluations, args.out.parent, console) for f in folders
    }
    document = {"validate_only": args.validate_only, "recordings": report, "summary": summary_rows(report)}
    args.out.write_text(json.dumps(document, indent=2, default=float) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
