"""Follower recordings made by the emulated arm itself, with servo parameters a test knows.

    truth = replace(load_fitted(), latency_s=0.07).at_supply(9.0)
    arm = synthetic_arm(truth, episodes=3, frames=180)                 # an ArmRecording, in memory
    write_follower_recording(root, {Side.LEFT: truth}, single_arm=True)  # a LeRobot v3.0 dataset on disk

The goals are what a leader gives: slow sways, and every 1.5 s a snap to a new pose held still, so
the recording shows the loop's lag, its top speed and gravity's sag alike.
"""

from pathlib import Path

import numpy as np

from robot.joint_map import SINGLE_ARM_NAMES
from robot.joints import BIMANUAL_KEYS, GRIPPER, JOINT_NAMES, Role, Side, arm_name
from robot.virtual.profiles import FOLLOWER_PROFILE
from robot.virtual.servo_params import ServoParams
from robot.virtual.twin.recording import DEG_PER_STEP, ArmRecording
from robot.virtual.twin.replay import replay_arm

FPS = 30.0
RANGES = {joint: (p.range_min, p.range_max) for joint, p in FOLLOWER_PROFILE.items()}
GRIPPER_SPAN_DEG = (RANGES[GRIPPER][1] - RANGES[GRIPPER][0]) * DEG_PER_STEP
HOLD_FRAMES = 45  # a new pose every 1.5 s


def leader_goals(frames: int, seed: int, amplitude_deg: float = 60.0) -> np.ndarray:
    """(frames, 6) goals in degrees (the gripper from its closed end)."""
    rng = np.random.default_rng(seed)
    t = np.arange(frames) / FPS
    goals = np.zeros((frames, len(JOINT_NAMES)))
    for i in range(len(JOINT_NAMES)):
        for _ in range(2):
            goals[:, i] += rng.uniform(5, 15) * np.sin(2 * np.pi * rng.uniform(0.1, 0.5) * t + rng.uniform(0, 6))
        for start in range(0, frames, HOLD_FRAMES):
            goals[start : start + HOLD_FRAMES, i] += rng.uniform(-amplitude_deg, amplitude_deg)
    gripper = JOINT_NAMES.index(GRIPPER)
    goals[:, gripper] = 30 + np.abs(goals[:, gripper])
    return goals


def synthetic_arm(
    params: ServoParams, episodes: int = 3, frames: int = 180, seed: int = 0, amplitude_deg: float = 60.0
) -> ArmRecording:
    """One arm's recording, each episode the emulated arm (`params`, at its supply) under leader goals."""
    trajectories = []
    for episode in range(episodes):
        goals = leader_goals(frames, seed + episode, amplitude_deg)
        trajectories.append((replay_arm(goals, goals[0], RANGES, params, FPS), goals))
    return ArmRecording(
        "left_follower", Path("synthetic"), FPS, tuple(range(episodes)), tuple(trajectories), RANGES, {}, "degrees"
    )


def write_follower_recording(
    root: Path,
    arms: dict[Side, ServoParams],
    episodes: int = 3,
    frames: int = 150,
    single_arm: bool = False,
    robot_type: str = "so101_follower",
    amplitude_deg: float = 60.0,
) -> Path:
    """A LeRobot v3.0 dataset of the emulated followers (degrees; grippers 0..100), no cameras; returns `root`.

    `single_arm`: one arm's six `<joint>.pos` columns (from the only entry of `arms`), as lerobot-record
    writes for an so101_follower; else the rig's 12 columns, an arm not in `arms` standing still.
    """
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    names = list(SINGLE_ARM_NAMES if single_arm else BIMANUAL_KEYS)
    joint = {"dtype": "float32", "shape": (len(names),), "names": names}
    features = {"action": joint, "observation.state": joint}
    dataset = LeRobotDataset.create(
        "someone/followers", fps=int(FPS), root=root, robot_type=robot_type, features=features, use_videos=False
    )
    gripper = JOINT_NAMES.index(GRIPPER)
    for episode in range(episodes):
        columns = []
        for k, side in enumerate(Side):
            params = arms.get(side)
            if params is None:
                still = np.zeros((frames, len(JOINT_NAMES)))
                columns.append((still, still))
                continue
            goals = leader_goals(frames, 10 * episode + k, amplitude_deg)
            states = replay_arm(goals, goals[0], RANGES, params, FPS)
            columns.append((states, goals))
        if single_arm:
            columns = [columns[[s for s in Side].index(next(iter(arms)))]]
        for t in range(frames):
            state = np.concatenate([s[t] for s, _ in columns])
            action = np.concatenate([a[t] for _, a in columns])
            for offset in range(0, len(names), len(JOINT_NAMES)):  # grippers in percent of their range
                state[offset + gripper] *= 100.0 / GRIPPER_SPAN_DEG
                action[offset + gripper] *= 100.0 / GRIPPER_SPAN_DEG
            dataset.add_frame(
                {
                    "action": action.astype(np.float32),
                    "observation.state": state.astype(np.float32),
                    "task": "move",
                }
            )
        dataset.save_episode()
    dataset.finalize()
    return root


def follower_name(side: Side) -> str:
    """The rig's name of that side's follower."""
    return arm_name(side, Role.FOLLOWER)
