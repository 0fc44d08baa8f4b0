"""benchmarks/servo_fit.py: it skips without the real recordings (not committed); given one, it fits and reports."""

import json
from pathlib import Path

import pytest

from benchmarks import servo_fit
from robot.joints import JOINT_NAMES, Side
from robot.virtual.servo_params import load_fitted
from tests.support.twin_recordings import write_follower_recording


def test_the_benchmark_skips_without_recordings_and_says_where_it_looked(tmp_path: Path, capsys, monkeypatch):
    monkeypatch.delenv(servo_fit.RECORDINGS_ENV, raising=False)
    assert servo_fit.main(["--recordings", str(tmp_path / "none"), "--out", str(tmp_path / "r.json")]) == 0
    assert "skipped: no LeRobot recordings under" in capsys.readouterr().out
    skipped = json.loads((tmp_path / "r.json").read_text())  # no rows for make bench's table, and why
    assert skipped["summary"] == []
    monkeypatch.setenv(servo_fit.RECORDINGS_ENV, str(tmp_path / "elsewhere"))
    assert servo_fit.main(["--validate-only", "--out", str(tmp_path / "r.json")]) == 0
    assert f"under {tmp_path / 'elsewhere'}" in capsys.readouterr().out


@pytest.mark.parametrize("validate_only", [False, True])
def test_the_benchmark_fits_each_recording_on_all_but_its_last_episode(tmp_path: Path, validate_only: bool):
    """A single-arm recording (read as the left arm), in degrees past +/-100 so the units are detected."""
    recordings = tmp_path / "recordings"
    write_follower_recording(
        recordings / "someone",
        {Side.LEFT: load_fitted().at_supply(12.0)},
        episodes=3,
        frames=60,
        single_arm=True,
        amplitude_deg=100.0,
    )
    out = tmp_path / "bench" / "servo_fit.json"
    argv = ["--recordings", str(recordings), "--out", str(out), "--evaluations", "4"]
    assert servo_fit.main([*argv, *(["--validate-only"] if validate_only else [])]) == 0
    report = json.loads(out.read_text())
    left = report["recordings"]["someone"]["left_follower"]
    assert left["episodes_fitted"] == 2
    assert left["held_out_episode"] == 2
    assert ("supply_v" in left) is not validate_only
    assert set(left["fitted"]) == set(JOINT_NAMES)
    assert set(left["hold_offsets"]) == {"shoulder_lift", "elbow_flex"}
    assert [row["metric"].split()[0] for row in report["summary"]] == list(JOINT_NAMES)
    assert (out.parent / "servo_fit_someone_left_follower.png").is_file()
