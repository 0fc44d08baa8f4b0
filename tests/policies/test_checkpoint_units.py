"""A checkpoint trained on LeRobot's percent-of-range joints is refused on the arms until its units are given.

The evidence is the training data's min and max per joint in the normalizer's state file: a body
joint at exactly +/-100 is the range clamp of percent units, one past +/-100 can only be degrees.
"""

import numpy as np
import pytest

from policies.checkpoint import read_checkpoint
from policies.checkpoint_units import checkpoint_units
from policies.commands.deploy import main as deploy_main
from robot.joint_units import JointUnits, units_from_statistics
from robot.joints import BIMANUAL_KEYS
from tests.support.checkpoints import copy_checkpoint
from tests.support.record_runs import rig_file

NAMES = ("left_shoulder_pan.pos", "left_elbow_flex.pos", "left_gripper.pos")


def test_the_statistics_say_degrees_percent_or_nothing():
    assert units_from_statistics(np.array([-120.0, -10, 0]), np.array([30.0, 10, 100]), NAMES).units == "degrees"
    percent = units_from_statistics(np.array([-40.0, -100, 0]), np.array([30.0, 10, 100]), NAMES)
    assert (percent.units, percent.evidence) == (
        "percent",
        "its training data hold left_elbow_flex.pos at exactly +/-100",
    )
    assert units_from_statistics(np.array([-40.0, -10, 0]), np.array([30.0, 10, 100]), NAMES).units == "unknown"


def test_statistics_in_degrees_with_a_joint_reaching_exactly_100_are_degrees():
    # Follower readings in degrees are whole or half servo steps; 100.0 is one (1137.5 steps), so
    # a joint that reached it says nothing about percent when the other ends are on the grid too.
    names = tuple(f"left_{joint}.pos" for joint in ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex"))
    step = 360.0 / 4095.0
    low = np.array([-700.5, -1000.5, -300.5, -200.5]) * step
    high = np.array([800.5, 600.5, 900.5, 1137.5]) * step  # wrist_flex's max: exactly 100.0
    verdict = units_from_statistics(low.astype(np.float32), high.astype(np.float32), names)
    assert verdict.units == "degrees"
    assert "degree grid" in verdict.evidence
    high[:3] += 0.37 * step  # the same ends off the grid: then the 100 is the range clamp
    assert units_from_statistics(low.astype(np.float32), high.astype(np.float32), names).units == "percent"


def _percent_copy(tiny_act_dir, tmp_path):
    from safetensors.numpy import load_file, save_file

    directory = copy_checkpoint(tiny_act_dir, tmp_path / "percent")
    for path in directory.glob("policy_*.safetensors"):
        stats = load_file(str(path))
        for key in ("observation.state", "action"):
            body = np.array(["gripper" not in n for n in BIMANUAL_KEYS])  # the tiny checkpoint's order: the rig's
            stats[f"{key}.max"] = np.where(body, 100.0, stats[f"{key}.max"]).astype(np.float32)
            stats[f"{key}.min"] = np.where(body, -100.0, stats[f"{key}.min"]).astype(np.float32)
        save_file(stats, str(path))
    return directory


def test_our_checkpoints_read_as_degrees(tiny_act_dir):
    verdict = checkpoint_units(read_checkpoint(str(tiny_act_dir)))
    assert verdict.units == "degrees"
    assert verdict.describe("--policy.units").startswith("degrees (detected: its training data reach 150.0")


def test_deploy_refuses_a_percent_checkpoint_naming_it_and_the_way_on(tiny_act_dir, tmp_path, capsys):
    directory = _percent_copy(tiny_act_dir, tmp_path)
    assert checkpoint_units(read_checkpoint(str(directory))).units == "percent"
    assert checkpoint_units(read_checkpoint(str(directory)), JointUnits.DEGREES).describe("--policy.units") == (
        "degrees (stated with --policy.units)"
    )
    code = deploy_main([f"--config_path={rig_file(tmp_path)}", f"--policy.path={directory}", "--record=false"])
    captured = capsys.readouterr()
    out = " ".join(captured.err.split())  # the shell's one error line
    assert code == 1
    assert f"{directory} was trained on joints in percent of each joint's range" in out
    assert "at exactly +/-100" in out
    assert out.rstrip().endswith("say so: --policy.units=degrees")
    assert "loaded on" not in captured.out  # refused before any weights loaded


@pytest.mark.parametrize("stated", ["percent"])
def test_stating_percent_is_refused_too(tiny_act_dir, stated, tmp_path, capsys):
    args = [f"--config_path={rig_file(tmp_path)}", f"--policy.path={tiny_act_dir}", "--record=false"]
    code = deploy_main([*args, f"--policy.units={stated}"])
    assert code == 1
    assert "percent of each joint's range (stated with --policy.units)" in " ".join(capsys.readouterr().err.split())
