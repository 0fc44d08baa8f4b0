"""Rollouts that start where the demonstrations did (so101-deploy --start_pose=demonstrations).

The pose is the median first state of the checkpoint's training episodes (found through its
train_config.json); the followers are ramped there before a rollout, never faster than the safety
layer's ramp, and the policy takes charge only once they arrived. so101-deploy with it, end to end,
is make demo's deploy step (tests/test_demo_e2e.py).
"""

import json
from pathlib import Path

import numpy as np
import pytest

from policies.engines.sync import SyncEngine
from policies.errors import PolicyError
from policies.rollout import RolloutSource, StartAt
from policies.source import PolicySource
from policies.start_pose import demonstrations_start
from policies.testing.scripted_predictor import ScriptedPredictor, wave
from robot.control_loop import ControlLoop
from robot.joint_values import JointValues
from robot.joints import BIMANUAL_KEYS, GRIPPER, JOINT_NAMES

# A raised pose inside every virtual follower's limits; the right arm mirrors pan and roll.
LEFT = {"shoulder_pan": 10.0, "shoulder_lift": -55.0, "elbow_flex": 5.0, "wrist_flex": 60.0, "wrist_roll": 0.0}
POSE = np.array([[LEFT[j] if j != GRIPPER else 20.0 for j in JOINT_NAMES]] * 2) * [[1] * 6, [-1, 1, 1, 1, -1, 1]]
ENCODER_STEP = 360 / 4095 + 1e-4  # a goal in degrees becomes whole encoder steps on its way to the bus


def training_dataset(root: Path, firsts: list[np.ndarray], names: tuple[str, ...] = BIMANUAL_KEYS) -> Path:
    """A LeRobot dataset (joints only) whose episode k starts at firsts[k] and drifts 1 degree a frame."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    joints = {"dtype": "float32", "shape": (len(names),), "names": list(names)}
    dataset = LeRobotDataset.create(
        repo_id=f"test/{root.name}", fps=30, features={"observation.state": joints, "action": joints}, root=root
    )
    try:
        for first in firsts:
            for frame in range(4):
                state = (np.asarray(first) + frame).astype(np.float32)
                dataset.add_frame({"observation.state": state, "action": state, "task": "Fold the cloth"})
            dataset.save_episode()
    finally:
        dataset.finalize()
    return root


def trained_on(checkpoint: Path, root: Path) -> Path:
    """`checkpoint` with the train_config.json lerobot-train writes, naming `root` as its dataset."""
    checkpoint.mkdir(parents=True, exist_ok=True)
    (checkpoint / "train_config.json").write_text(json.dumps({"dataset": {"repo_id": "test/demos", "root": str(root)}}))
    return checkpoint


def test_the_start_is_the_median_first_state_of_the_training_episodes(tmp_path):
    firsts = [POSE.reshape(-1) + shift for shift in (-4.0, 0.0, 9.0)]
    root = training_dataset(tmp_path / "demos", firsts)
    start = demonstrations_start(trained_on(tmp_path / "ckpt", root))
    assert start.pose == JointValues(POSE)  # the median, not the mean (which 9 degrees would pull)
    assert (start.root, start.episodes) == (root.resolve(), 3)
    assert "the median first state of 3 episodes" in start.describe()


def test_no_training_dataset_or_another_joint_order_is_refused_with_the_way_on(tmp_path):
    with pytest.raises(PolicyError, match=r"names no training dataset found on this machine.*--start_pose=here$"):
        demonstrations_start(tmp_path / "bare")
    names = tuple(reversed(BIMANUAL_KEYS))
    root = training_dataset(tmp_path / "reversed", [POSE.reshape(-1)], names=names)
    with pytest.raises(PolicyError, match=r"not the rig's 12 joints in order \(right_gripper.pos"):
        demonstrations_start(trained_on(tmp_path / "ckpt", root))


class Steps:
    """Every tick's goals sent, and whether the policy (not the hold) produced them."""

    def __init__(self, policy: PolicySource) -> None:
        self.source = policy
        self.sent: list[np.ndarray] = []
        self.policy: list[bool] = []

    def on_step(self, step) -> None:
        self.sent.append(step.sent.vector.copy())
        self.policy.append(self.source.has_acted)


def test_the_arms_ramp_to_the_start_and_the_policy_acts_only_once_they_arrived(virtual_rig):
    make_rig, _ = virtual_rig
    with make_rig() as rig:
        # A policy swaying 5 degrees about where it takes charge; its taking charge is a transition.
        policy = PolicySource(
            SyncEngine(ScriptedPredictor(chunk_size=10, pattern=wave(5.0))), on_transition=rig.begin_transition
        )
        steps = Steps(policy)
        start = StartAt(JointValues(POSE), reached=lambda: not rig.in_transition)
        source = RolloutSource(policy, in_charge=lambda now: True, on_transition=rig.begin_transition, start=start)
        ControlLoop(rig, source, hooks=[steps]).run(duration_s=4.0)
        ramp_deg = rig.safety.ramp_speed_deg_s / rig.config.fps
    sent, acted = np.array(steps.sent), np.array(steps.policy)
    first = int(np.argmax(acted))
    assert acted.any(), "the arms never reached the start pose in 4 s"
    assert first > 10  # from the rest pose the ramp takes a while (about 40 degrees at 30 degrees a second)
    np.testing.assert_allclose(sent[first - 1], POSE.reshape(-1), atol=ENCODER_STEP)  # arrived, then handed over
    body = np.array(["gripper" not in key for key in BIMANUAL_KEYS])
    # The largest per-tick step of any goal, to the start pose and then to the policy's: one ramp step.
    assert np.abs(np.diff(sent, axis=0))[:, body].max() <= ramp_deg + ENCODER_STEP
