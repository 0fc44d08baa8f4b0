"""so101-fit end to end, in process, on LeRobot datasets of emulated followers whose servo parameters are known."""

import json
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from robot.cli import parse_command
from robot.commands.fit import FitCommandConfig, main
from robot.joints import JOINT_NAMES, Side
from robot.virtual.servo_params import FITTED_KEYS, load_fitted
from robot.virtual.servo_table import arm_params, read_servo_tables
from tests.support.commands import virtual_rig_file
from tests.support.twin_recordings import write_follower_recording

SLOW = replace(load_fitted(), latency_s=0.1, p_duty_per_step=0.0008)  # a sluggish arm, unlike the committed fit
FAST = ["--evaluations=8", "--dataset.units=degrees"]  # a short fit: these tests check the command, not the optimum


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("fit_recordings")
    committed = load_fitted().at_supply(12.0)
    return {
        "both": write_follower_recording(folder / "both", {Side.LEFT: SLOW.at_supply(12.0), Side.RIGHT: committed}),
        "right": write_follower_recording(folder / "right", {Side.RIGHT: SLOW.at_supply(12.0)}, single_arm=True),
        "leader": write_follower_recording(folder / "leader", {Side.LEFT: committed}, robot_type="so101_leader"),
        "still": write_follower_recording(folder / "still", {}, episodes=2, frames=40),
    }


def _fit(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_a_bimanual_fit_reports_both_arms_before_and_after_and_writes_nothing(
    tmp_path: Path, recordings: dict[str, Path], capsys: pytest.CaptureFixture[str]
):
    rig = virtual_rig_file(tmp_path)
    before = rig.read_text()
    out = tmp_path / "report"
    status, text, err = _fit(
        capsys, f"--dataset.root={recordings['both']}", f"--config_path={rig}", f"--output_dir={out}", *FAST
    )
    assert status == 0, err
    assert "left_follower: held-out episodes, real / emulated before the fit / after" in text
    assert "fitting on episodes 0,1" in text
    assert "checking on 2" in text
    assert "nothing written; to use it: add --write=true" in text
    assert rig.read_text() == before
    report = json.loads((out / "fit_report.json").read_text())
    assert set(report) == {"left_follower", "right_follower"}
    left = report["left_follower"]
    assert left["fitted_on"]["episodes"] == [0, 1]
    assert left["fitted_on"]["validated_on"] == [2]
    # The sluggish left arm: the committed table tracks far better than it did, and the fit moves toward it.
    assert all(row["error_ratio"] < 0.8 for row in left["before"].values())
    worst_before = max(abs(row["error_ratio"] - 1) for row in left["before"].values())
    worst_after = max(abs(row["error_ratio"] - 1) for row in left["after"].values())
    assert worst_after < worst_before
    assert (out / "left_follower_heldout.png").stat().st_size > 10_000
    assert (out / "right_follower_heldout.png").is_file()


def test_write_stores_each_arms_table_with_its_source_and_the_rig_uses_it(
    tmp_path: Path, recordings: dict[str, Path], capsys: pytest.CaptureFixture[str]
):
    rig = virtual_rig_file(tmp_path)
    out = str(tmp_path / "report")
    args = [f"--config_path={rig}", f"--output_dir={out}", "--write=true", *FAST]
    status, text, err = _fit(capsys, f"--dataset.root={recordings['both']}", *args)
    assert status == 0, err
    table = tmp_path / "rig.servo.json"
    assert f"into {table}" in text
    assert Path(yaml.safe_load(rig.read_text())["virtual"]["servo_table"]) == table
    stored = read_servo_tables(table)
    left = stored["left_follower"].document
    assert set(left["params"]) == set(FITTED_KEYS)
    assert left["fitted_on"]["recording"] == str(recordings["both"])
    assert left["fitted_on"]["episodes"] == [0, 1]
    assert left["fitted_on"]["validated_on"] == [2]
    assert left["fitted_on"]["date"].startswith("20")
    assert left["fit_error"]["cost_after"] <= left["fit_error"]["cost_before"]
    assert set(left["fit_error"]["held_out"])
    assert "error_ratio" in left["fit_error"]["held_out"]["elbow_flex"]
    # Every command on that rig now reads this table for the left arm.
    config = parse_command(FitCommandConfig, [f"--config_path={rig}", "--dataset.root=x"])
    assert config.rig.virtual is not None
    assert config.rig.virtual.servo_table == table
    assert arm_params(table, "left_follower") == stored["left_follower"].params != load_fitted()
    # A second fit, of the right arm alone from a single-arm recording, keeps the left arm's table (the
    # map given as JSON, as a recording with other column names needs it).
    joint_map = json.dumps({f"right_{joint}.pos": f"{joint}.pos" for joint in JOINT_NAMES})
    status, _, err = _fit(capsys, f"--dataset.root={recordings['right']}", f"--joint_map={joint_map}", *args)
    assert status == 0, err
    again = read_servo_tables(table)
    assert again["left_follower"] == stored["left_follower"]
    assert again["right_follower"].document["fitted_on"]["joint_map"] == joint_map
    assert again["right_follower"].document["fitted_on"]["recording"] == str(recordings["right"])


@pytest.mark.parametrize(
    ("recording", "extra", "status", "fragment"),
    [
        ("right", [], 1, "is a single-arm recording (6 joints) and this rig has two arms. Next: say which arm"),
        ("leader", [], 1, "is a leader's recording (robot_type so101_leader)"),
        ("still", [], 1, "too little motion to fit in episodes 0,1"),
        ("both", ["--dataset.episodes=2"], 1, "no episode left to fit on"),
        ("both", ["--joint_map=up"], 2, "joint_map='up' is neither left, right nor a JSON object"),
        ("both", ["--dataset.episodes=7,8"], 1, "has no episode 7"),
    ],
)
def test_a_recording_that_cannot_be_fitted_is_refused_and_nothing_is_written(
    tmp_path: Path,
    recordings: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    recording: str,
    extra: list[str],
    status: int,
    fragment: str,
):
    rig = virtual_rig_file(tmp_path)
    before = rig.read_text()
    args = [f"--dataset.root={recordings[recording]}", f"--config_path={rig}", "--write=true", *FAST, *extra]
    code, _, err = _fit(capsys, *args, f"--output_dir={tmp_path / 'out'}")
    assert code == status, err
    assert fragment in err
    assert len(err.strip().splitlines()) == 1
    assert "Next:" in err
    assert rig.read_text() == before
    assert not (tmp_path / "rig.servo.json").exists()


def test_write_needs_a_rig_file_of_ones_own_with_a_virtual_section(
    tmp_path: Path, recordings: dict[str, Path], capsys: pytest.CaptureFixture[str]
):
    code, _, err = _fit(capsys, f"--dataset.root={recordings['both']}", "--write=true", *FAST)
    assert code == 2
    assert "cp hardware_configs/virtual.yaml my_twin.yaml, then add --config_path=my_twin.yaml" in err
    real = tmp_path / "real.yaml"
    ports = {f"{side}_{role}": "/dev/null" for side in ("left", "right") for role in ("follower", "leader")}
    real.write_text(yaml.safe_dump({"ports": ports}))
    code, _, err = _fit(capsys, f"--dataset.root={recordings['both']}", f"--config_path={real}", "--write=true")
    assert code == 2
    assert "describes real arms" in err
    code, _, err = _fit(capsys, f"--config_path={real}")
    assert code == 2
    assert "pass --dataset.root=" in err
