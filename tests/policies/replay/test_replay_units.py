"""so101-replay on someone else's single-arm dataset in LeRobot's percent-of-range units, without videos.

The dataset is written by LeRobot's own writer, as `lerobot-record` with `use_degrees=False` writes one:
joints in -100..100 of their calibrated range, shoulder_lift clamped at exactly 100 on a third of the
frames. On dry arms the replay runs on the left arm and states the units; live arms are refused until
the units are given.
"""

import numpy as np
import pytest

from policies.commands.replay import main

NAMES = ["shoulder_pan.pos", "shoulder_lift.pos", "elbow_flex.pos", "wrist_flex.pos", "wrist_roll.pos", "gripper.pos"]
FRAMES = 60


@pytest.fixture(scope="module")
def percent_dataset(tmp_path_factory):
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    root = tmp_path_factory.mktemp("theirs") / "so101_percent"
    feature = {"dtype": "float32", "shape": (len(NAMES),), "names": NAMES}
    features = {"action": feature, "observation.state": feature}
    dataset = LeRobotDataset.create(
        "someone/so101_percent", fps=30, root=root, robot_type="so101_follower", features=features, use_videos=False
    )
    rng = np.random.default_rng(3)
    for _ in range(2):
        for frame in range(FRAMES):
            state = rng.uniform(-60, 60, len(NAMES)).astype(np.float32)
            state[1] = 100.0 if frame % 3 == 0 else state[1]  # the range clamp
            state[5] = abs(state[5])
            dataset.add_frame({"action": state, "observation.state": state, "task": "pick the cube"})
        dataset.save_episode()
    dataset.finalize()
    return root


def test_a_dry_replay_runs_on_one_arm_and_states_the_units(percent_dataset, tmp_path, capsys):
    code = main([f"--dataset.root={percent_dataset}", "--joint_map=left", f"--report.output_dir={tmp_path / 'r'}"])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0, out
    assert (
        f"joint units: percent of each joint's range (detected: {FRAMES // 3} of {FRAMES} frames hold a body"
        " joint at exactly +/-100)"
    ) in out
    assert "held joints: right_shoulder_pan.pos" in out
    assert (tmp_path / "r" / "report.json").is_file()


def test_live_arms_are_refused_until_the_units_are_given(percent_dataset, tmp_path, capsys):
    args = [
        f"--dataset.root={percent_dataset}",
        "--joint_map=left",
        "--target=live",
        f"--report.output_dir={tmp_path / 'r'}",
    ]
    assert main(args) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "holds joints in percent of each joint's range" in err
    assert "replayed live they would move by the wrong amounts" in err
    assert "--target=dry" in err
    assert "--dataset.units=degrees" in err
    assert not (tmp_path / "r").exists()  # refused before anything ran
