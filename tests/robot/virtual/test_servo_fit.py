"""benchmarks/servo_fit.py on synthetic recordings made by the model itself (the real ones are not committed)."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks import servo_fit
from benchmarks.servo_recordings import load_recording
from benchmarks.servo_replay import fit, replay_arm
from robot.joints import GRIPPER, JOINT_NAMES
from robot.virtual.profiles import FOLLOWER_PROFILE
from robot.virtual.servo_params import FITTED_KEYS, ServoParams

FPS = 30.0
RANGES = {j: (p.range_min, p.range_max) for j, p in FOLLOWER_PROFILE.items()}
GRIPPER_SPAN_DEG = (RANGES[GRIPPER][1] - RANGES[GRIPPER][0]) * 360 / 4096


def _actions(frames: int, seed: int) -> np.ndarray:
    """Smooth leader-like goals: degrees for the body, 0..100 for the gripper."""
    rng = np.random.default_rng(seed)
    t = np.arange(frames) / FPS
    actions = np.zeros((frames, 6))
    for i in range(6):
        for _ in range(3):
            actions[:, i] += rng.uniform(4, 12) * np.sin(2 * np.pi * rng.uniform(0.1, 0.6) * t + rng.uniform(0, 6))
    actions[:, JOINT_NAMES.index(GRIPPER)] = 40 + actions[:, JOINT_NAMES.index(GRIPPER)]
    return actions


def write_synthetic(folder: Path, params: ServoParams, episodes: int = 2, frames: int = 120, seed: int = 0) -> None:
    """A LeRobot v3-shaped recording of the emulated follower under `params` (no calibration file)."""
    rows = []
    for episode in range(episodes):
        actions = _actions(frames, seed + episode)
        in_degrees = actions.copy()
        in_degrees[:, 5] = actions[:, 5] / 100 * GRIPPER_SPAN_DEG
        start = in_degrees[0]
        states = replay_arm(in_degrees, start, RANGES, params, FPS)
        states[:, 5] = states[:, 5] / GRIPPER_SPAN_DEG * 100
        for t in range(frames):
            rows.append(
                {
                    "action": actions[t].astype(np.float32),
                    "observation.state": states[t].astype(np.float32),
                    "timestamp": t / FPS,
                    "frame_index": t,
                    "episode_index": episode,
                }
            )
    (folder / "data" / "chunk-000").mkdir(parents=True)
    (folder / "meta").mkdir()
    pd.DataFrame(rows).to_parquet(folder / "data" / "chunk-000" / "file-000.parquet")
    names = [f"{j}.pos" for j in JOINT_NAMES]
    info = {
        "codebase_version": "v3.0",
        "robot_type": "so101_follower",
        "fps": FPS,
        "features": {"observation.state": {"names": names}, "action": {"names": names}},
    }
    (folder / "meta" / "info.json").write_text(json.dumps(info))


def test_the_fit_recovers_the_parameters_a_synthetic_recording_was_made_with(tmp_path: Path):
    truth = replace(ServoParams(), latency_s=0.07, p_duty_per_step=0.002)
    write_synthetic(tmp_path / "synthetic", truth, frames=90)
    recording = load_recording(tmp_path / "synthetic", units="degrees")
    assert not recording.skipped
    result = fit([recording], ServoParams(), ("p_duty_per_step", "latency_s"), max_evaluations=40)
    assert result.cost_after < result.cost_before / 10
    assert result.params.latency_s == pytest.approx(0.07, abs=0.01)
    assert result.params.p_duty_per_step == pytest.approx(0.002, rel=0.15)


def test_the_tool_skips_without_recordings(tmp_path: Path, capsys, monkeypatch):
    monkeypatch.delenv(servo_fit.RECORDINGS_ENV, raising=False)
    assert servo_fit.main(["--recordings", str(tmp_path / "none"), "--out", str(tmp_path / "r.json")]) == 0
    assert "skipped: no LeRobot recordings under" in capsys.readouterr().out
    skipped = json.loads((tmp_path / "r.json").read_text())  # no rows for make bench's table, and why
    assert skipped["summary"] == []
    assert "no LeRobot recordings" in skipped["skipped"]
    # make bench names no folder: the environment variable's, else outputs/servo_recordings.
    monkeypatch.setenv(servo_fit.RECORDINGS_ENV, str(tmp_path / "elsewhere"))
    assert servo_fit.main(["--validate-only", "--out", str(tmp_path / "r.json")]) == 0
    assert f"under {tmp_path / 'elsewhere'}" in capsys.readouterr().out


def test_the_tool_fits_validates_reports_and_plots(tmp_path: Path, capsys):
    for name, seed in (("a_train", 0), ("b_held", 5)):
        write_synthetic(tmp_path / "recs" / name, ServoParams(), episodes=1, frames=90, seed=seed)
    table, report, png = tmp_path / "fitted.json", tmp_path / "report.json", tmp_path / "plot.png"
    common = ["--recordings", str(tmp_path / "recs"), "--held-out", "b_held", "--units", "degrees"]
    argv = [*common, "--max-evaluations", "2", "--table", str(table), "--out", str(report), "--plot", str(png)]
    assert servo_fit.main(argv) == 0
    text = capsys.readouterr().out
    assert "held-out b_held" in text
    assert "acceptance targets:" in text
    written = json.loads(table.read_text())
    assert set(written["params"]) == set(FITTED_KEYS)
    assert set(written["held_out_fidelity"]) == set(JOINT_NAMES)
    # The model replayed against itself: the same lag as the "real" arm, every joint.
    assert all(row["targets"]["lag_within_1_frame"] for row in written["held_out_fidelity"].values())
    assert png.stat().st_size > 10_000
    rows = json.loads(report.read_text())["summary"]
    assert [r["metric"].split()[0] for r in rows] == list(JOINT_NAMES)
    assert all(r["ours"] > 0 and r["anchor"] > 0 for r in rows)
    # make bench: the committed (here: just written) table's fidelity, no fit, the table untouched.
    before = table.read_bytes()
    again = tmp_path / "again.json"
    assert servo_fit.main([*common, "--validate-only", "--table", str(table), "--out", str(again)]) == 0
    assert "no fit" in capsys.readouterr().out
    assert table.read_bytes() == before
    assert json.loads(again.read_text())["fidelity"] == json.loads(report.read_text())["fidelity"]
