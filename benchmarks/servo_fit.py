"""Fit the virtual rig's servo model to real SO-101 follower recordings and report its fidelity.

    .venv/bin/python -m benchmarks.servo_fit --recordings /path/to/recordings   # fit, validate, rewrite the table
    .venv/bin/python -m benchmarks.servo_fit --validate-only                    # the committed table's fidelity

Recordings are read from `--recordings`, else `$SO101_SERVO_RECORDINGS`, else outputs/servo_recordings/.
Each recording (a LeRobot v3 folder: meta/info.json, data/chunk-*/file-*.parquet) is converted to
degrees (`benchmarks/servo_recordings.py`); the model's free rows (`robot/virtual/servo_params.py`)
are fitted on all recordings but one, and the held-out one is replayed through the whole emulated
follower for the report: per joint, real and emulated lag (frames), mean and p95 tracking error
|state[t+1] - action[t]|, gravity sag on shoulder_lift and elbow_flex, and the emulated-vs-real
state difference, with the acceptance targets of issue 23. The fitted rows are written to
`robot/virtual/servo_fitted.json` (`--table`), the report to `--out` (its `summary` rows go into
`make bench`'s table), and one held-out episode is plotted under outputs/bench/. Without recordings
it says so and skips (they are not committed: their repositories carry no licence).
"""

import argparse
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from benchmarks.servo_recordings import DEG_PER_STEP, Recording, find_recordings, load_recording
from benchmarks.servo_replay import LAG_FRAMES_MAX, STILL_DEG, STILL_FRAMES, fit, replay_arm
from robot.joints import JOINT_NAMES
from robot.virtual.servo_params import FITTED_FILE, FITTED_KEYS, ServoParams, load_fitted

SAG_JOINTS = ("shoulder_lift", "elbow_flex")
WORKING_FRACTION = 0.8  # sag counts only within this fraction of the half range around the middle
# The fitted rows. Backlash is not among them: the recordings barely constrain it (a fit with it
# free moved the cost by 2 % while taking it to 9 steps, past the datasheet's 0.5 degrees, and it
# then overstated the held-out arm's elbow sag by 70 %), so it stays at the datasheet's bound.
FREE = FITTED_KEYS
RECORDINGS_ENV = "SO101_SERVO_RECORDINGS"
DEFAULT_RECORDINGS = Path("outputs/servo_recordings")


def working_masks(recording: Recording) -> list[np.ndarray]:
    """Per episode, the frames where shoulder_lift and elbow_flex are inside the middle of their range.

    At the ends of its range an SO-101 rests folded on its own body: the follower stops short of
    a leader that goes further, which is contact, not gravity sag.
    """
    masks = []
    for state, _ in recording.episodes:
        mask = np.ones(len(state), dtype=bool)
        for joint in SAG_JOINTS:
            low, high = recording.ranges_steps[joint]
            half_span_deg = (high - low) / 2 * DEG_PER_STEP
            mask &= np.abs(state[:, JOINT_NAMES.index(joint)]) < WORKING_FRACTION * half_span_deg
        masks.append(mask)
    return masks


def joint_metrics(episodes: list[tuple[np.ndarray, np.ndarray]], i: int, working: list[np.ndarray]) -> dict[str, float]:
    """Lag (frames), mean and p95 |state[t+1] - action[t]| and sag (deg) of joint `i` over episodes.

    Sag: the mean state - goal over frames where the goal has been still for STILL_FRAMES and the
    arm is in a working pose (`working`, per episode).
    """
    lag_err = []
    for k in range(LAG_FRAMES_MAX + 1):
        errs = [np.abs(s[k:, i] - a[: len(a) - k, i]) for s, a in episodes if len(s) > k]
        lag_err.append(float(np.mean(np.concatenate(errs))))
    one = np.concatenate([np.abs(s[1:, i] - a[:-1, i]) for s, a in episodes])
    sag = []
    for (s, a), mask in zip(episodes, working, strict=True):
        for t in range(STILL_FRAMES, len(a)):
            window = a[t - STILL_FRAMES : t + 1, i]
            if mask[t] and window.max() - window.min() < STILL_DEG:
                sag.append(s[t, i] - a[t, i])
    return {
        "lag_frames": int(np.argmin(lag_err)),
        "err_mean_deg": float(one.mean()),
        "err_p95_deg": float(np.percentile(one, 95)),
        "sag_deg": float(np.mean(sag)) if sag else float("nan"),
        "still_frames": len(sag),
    }


def validate(recording: Recording, params: ServoParams) -> tuple[dict[str, dict], list[np.ndarray]]:
    """Replay the held-out recording through the emulated arm; per-joint real, emulated and targets."""
    emulated = [replay_arm(a, s[0], recording.ranges_steps, params, recording.fps) for s, a in recording.episodes]
    sim_episodes = [(e, a) for e, (_, a) in zip(emulated, recording.episodes, strict=True)]
    report = {}
    working = working_masks(recording)
    for i, joint in enumerate(JOINT_NAMES):
        if joint in recording.skipped:
            continue
        real, emu = joint_metrics(recording.episodes, i, working), joint_metrics(sim_episodes, i, working)
        diff = np.concatenate(
            [np.abs(e[:, i] - s[:, i]) for e, (s, _) in zip(emulated, recording.episodes, strict=True)]
        )
        targets = {
            "lag_within_1_frame": abs(emu["lag_frames"] - real["lag_frames"]) <= 1,
            "mean_error_within_30pct": abs(emu["err_mean_deg"] / real["err_mean_deg"] - 1) <= 0.30,
        }
        if joint in SAG_JOINTS:
            same_sign = np.sign(emu["sag_deg"]) == np.sign(real["sag_deg"])
            targets["sag_sign_and_within_50pct"] = bool(same_sign and abs(emu["sag_deg"] / real["sag_deg"] - 1) <= 0.50)
        report[joint] = {"real": real, "emulated": emu, "state_diff_mean_deg": float(diff.mean()), "targets": targets}
    return report, emulated


def plot(recording: Recording, emulated: list[np.ndarray], path: Path) -> None:
    """Real and emulated state with the action, one held-out episode, every joint."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    state, action = recording.episodes[0]
    t = np.arange(len(state)) / recording.fps
    fig, axes = plt.subplots(3, 2, figsize=(12, 9), sharex=True)
    for i, (joint, ax) in enumerate(zip(JOINT_NAMES, axes.flat, strict=True)):
        ax.plot(t, action[:, i], color="0.6", lw=1, label="action (leader)")
        ax.plot(t, state[:, i], color="C0", lw=1.2, label="real follower")
        ax.plot(t, emulated[0][:, i], color="C3", lw=1.2, ls="--", label="emulated (fitted)")
        ax.set_title(joint + (" (skipped: never followed)" if joint in recording.skipped else ""))
        ax.set_ylabel("deg")
    axes[-1, 0].set_xlabel("s")
    axes[-1, 1].set_xlabel("s")
    axes[0, 0].legend(loc="best", fontsize=8)
    fig.suptitle(f"{recording.name} episode 0: real vs emulated SO-101 follower")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write_fitted(path: Path, params: ServoParams, train: list[Recording], held_out: Recording, report: dict) -> None:
    """The fitted rows, their provenance and the held-out fidelity, as the committed JSON file."""
    rows = {k: v for k, v in asdict(params).items() if k in FITTED_KEYS}
    document = {
        "about": "Fitted rows of robot/virtual/servo_params.py; written by benchmarks/servo_fit.py",
        "fitted_on": [f"{r.name}: {r.source}; {r.frames} frames; {r.units_note}" for r in train],
        "held_out": f"{held_out.name}: {held_out.source}; {held_out.frames} frames; {held_out.units_note}",
        "params": rows,
        "held_out_fidelity": report,
    }
    path.write_text(json.dumps(document, indent=2, default=float) + "\n")


def summary_rows(report: dict, held_out: str) -> list[dict]:
    """`make bench`'s rows: per joint, the emulated follower's mean tracking error against the real arm's."""
    return [
        {
            "benchmark": "servo_fit",
            "metric": f"{joint} mean tracking error |state[t+1] - action[t]|",
            "unit": "deg",
            "ours": row["emulated"]["err_mean_deg"],
            "anchor": row["real"]["err_mean_deg"],
            "anchor_name": f"real SO-101 follower ({held_out}, held out)",
            "higher_is_better": False,
            "target": "within ±30 % of the real arm's; lag within 1 frame",
        }
        for joint, row in report.items()
    ]


def print_report(report: dict) -> bool:
    """The fidelity table; True when every target is met."""
    print(
        f"{'joint':14s} {'lag real/emu':>12s} {'err mean real/emu':>18s} {'err p95 real/emu':>17s} "
        f"{'sag real/emu':>14s} {'|emu-real|':>10s}  targets"
    )
    all_met = True
    for joint, row in report.items():
        real, emu = row["real"], row["emulated"]
        sag = f"{real['sag_deg']:+.2f}/{emu['sag_deg']:+.2f}" if joint in SAG_JOINTS else "-"
        met = ", ".join(f"{k} {'MET' if v else 'MISSED'}" for k, v in row["targets"].items())
        all_met &= all(row["targets"].values())
        print(
            f"{joint:14s} {real['lag_frames']:>5d}/{emu['lag_frames']:<6d} "
            f"{real['err_mean_deg']:>8.2f}/{emu['err_mean_deg']:<9.2f} "
            f"{real['err_p95_deg']:>8.2f}/{emu['err_p95_deg']:<8.2f} "
            f"{sag:>14s} {row['state_diff_mean_deg']:>10.2f}  {met}"
        )
    return all_met


def recordings_folder(given: Path | None) -> Path:
    """`--recordings`, else `$SO101_SERVO_RECORDINGS`, else outputs/servo_recordings."""
    if given is not None:
        return given
    return Path(os.environ[RECORDINGS_ENV]) if os.environ.get(RECORDINGS_ENV) else DEFAULT_RECORDINGS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--recordings",
        type=Path,
        default=None,
        help=f"folder of LeRobot v3 follower recordings (default ${RECORDINGS_ENV}, else {DEFAULT_RECORDINGS})",
    )
    parser.add_argument(
        "--held-out", default=None, help="recording to validate on (default: one with a joint that never followed)"
    )
    parser.add_argument("--units", choices=("auto", "degrees", "range_m100"), default="auto")
    parser.add_argument(
        "--validate-only", action="store_true", help="no fit: report the committed table's fidelity (make bench)"
    )
    parser.add_argument("--table", type=Path, default=FITTED_FILE, help="where the fitted table goes")
    parser.add_argument("--out", type=Path, default=Path("outputs/bench/servo_fit.json"), help="the report (JSON)")
    parser.add_argument("--plot", type=Path, default=Path("outputs/bench/servo_fit_heldout.png"))
    parser.add_argument("--max-evaluations", type=int, default=250)
    args = parser.parse_args(argv)
    folder = recordings_folder(args.recordings)
    folders = find_recordings(folder)
    if not folders:
        why = (
            f"no LeRobot recordings under {folder} (--recordings DIR or ${RECORDINGS_ENV}, each recording a "
            "folder with meta/info.json and data/; the real SO-101 recordings are not committed: no licence; "
            "benchmarks/README.md names them)"
        )
        print(f"servo_fit: skipped: {why}")
        # A report that says so, with no rows: make bench's table must not show an older run's.
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"skipped": why, "summary": []}, indent=2) + "\n")
        return 0
    recordings = [load_recording(f, args.units) for f in folders]
    for r in recordings:
        skipped = "; ".join(f"{j} {why}" for j, why in r.skipped.items()) or "none"
        print(
            f"recording {r.name}: {r.source}; {len(r.episodes)} episodes, {r.frames} frames at {r.fps:g} fps; "
            f"{r.units_note}; skipped joints: {skipped}"
        )
    # Default: hold out a recording with a joint that never followed, so the fit sees every joint.
    incomplete = [r for r in recordings if r.skipped]
    held = next((r for r in recordings if r.name == args.held_out), (incomplete or recordings)[0])
    train = [r for r in recordings if r is not held] or [held]
    if len(recordings) == 1:
        print("only one recording: fitting and validating on it (no held-out check)")
    if args.validate_only:
        params = load_fitted(args.table)
        print(f"validating the table in {args.table} (no fit)")
    else:
        started = time.monotonic()
        result = fit(
            train,
            ServoParams(),
            FREE,
            args.max_evaluations,
            lambda n, c: print(f"\r  fit: evaluation {n}, cost {c:.3f}", end="", file=sys.stderr, flush=True),
        )
        print(file=sys.stderr)
        print(
            f"fitted on {', '.join(r.name for r in train)} in {time.monotonic() - started:.0f} s, "
            f"{result.evaluations} evaluations; cost {result.cost_before:.3f} -> {result.cost_after:.3f}"
        )
        params = result.params
        for key in FITTED_KEYS:
            print(f"  {key} = {getattr(params, key)}")
    report, emulated = validate(held, params)
    print(f"held-out {held.name} ({held.source}), degrees:")
    all_met = print_report(report)
    print(f"acceptance targets: {'all met' if all_met else 'not all met'}")
    if not args.validate_only:
        write_fitted(args.table, params, train, held, report)
        print(f"wrote {args.table}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    document = {"held_out": held.name, "all_targets_met": all_met, "fidelity": report}
    args.out.write_text(json.dumps(document | {"summary": summary_rows(report, held.name)}, indent=2) + "\n")
    plot(held, emulated, args.plot)
    print(f"wrote {args.out} and {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
