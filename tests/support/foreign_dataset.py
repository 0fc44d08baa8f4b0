"""Someone else's dataset, as LeRobot writes one: one SO-101 arm in percent-of-range units, cameras `front`, `top`.

`lerobot-record` with `use_degrees=False` records joints in -100..100 of their calibrated range
(shoulder_lift clamped at exactly 100 here on a third of the frames) and names the joints bare
(`shoulder_pan.pos`). Tests copy it and delete its `videos/` to get a dataset shared without them.
"""

from pathlib import Path

import numpy as np

NAMES = ["shoulder_pan.pos", "shoulder_lift.pos", "elbow_flex.pos", "wrist_flex.pos", "wrist_roll.pos", "gripper.pos"]
CAMERAS = ("front", "top")
FRAMES = 45
EPISODES = 2


def write_single_arm_percent(root: Path) -> Path:
    """The dataset at `root` (written by LeRobot's writer); returns `root`."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    joint = {"dtype": "float32", "shape": (len(NAMES),), "names": NAMES}
    camera = {"dtype": "video", "shape": (48, 64, 3), "names": ["height", "width", "channels"]}
    features = {"action": joint, "observation.state": joint, **{f"observation.images.{c}": camera for c in CAMERAS}}
    dataset = LeRobotDataset.create(
        "someone/so101_percent", fps=30, root=root, robot_type="so101_follower", features=features, use_videos=True
    )
    rng = np.random.default_rng(5)
    for episode in range(EPISODES):
        t = np.linspace(0, 1, FRAMES)
        for frame in range(FRAMES):
            state = (40 * np.sin(2 * np.pi * (t[frame] + episode / 3 + np.arange(len(NAMES)) / 7))).astype(np.float32)
            state[1] = 100.0 if frame % 3 == 0 else state[1]  # the range clamp
            state[5] = 10.0 if 10 <= frame < 30 else 80.0  # the gripper closes and opens again
            image = rng.integers(0, 255, (48, 64, 3), dtype=np.uint8)
            dataset.add_frame(
                {
                    "action": state,
                    "observation.state": state,
                    "task": "pick the cube",
                    **{f"observation.images.{c}": image for c in CAMERAS},
                }
            )
        dataset.save_episode()
    dataset.finalize()
    return root
