"""Write small LeRobot v3.0 datasets with scripted bimanual motion, for tests, demos and benchmarks.

Each episode follows a scenario (reach, grasp, fold, release, push aside, or a failure) in the
recorded state and action, and every video frame carries a binary code of (episode, frame, view) in
its top two rows of cells, so a test can tell exactly which frame a decoder returned. The overhead
view also draws the cloth, so contact sheets look like the task. This module imports `lerobot`.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path

import numpy as np

from robot.joints import BIMANUAL_KEYS, CAMERA_ROLES, JOINT_NAMES
from teleop.dataset.vocabulary import ACTION_KEY, STATE_KEY, camera_key

NAMES: tuple[str, ...] = BIMANUAL_KEYS  # left_shoulder_pan.pos ... right_gripper.pos
CODE_CELLS = 16  # code cells per row (frame index in row 0; episode and view in row 1)
_OPEN, _CLOSED = 90.0, 8.0  # gripper command, % open
_STATE_LAG_FRAMES = 3  # followers trail the command by this many frames


class Scenario(StrEnum):
    """What the arms do in a synthetic episode."""

    FOLD_AND_PUSH = "fold_and_push"  # reach, grasp, fold, release, push aside
    FOLD_NO_PUSH = "fold_no_push"  # reach, grasp, fold, release, then stay
    GRASP_ONLY = "grasp_only"  # reach and close the grippers, never lift or release
    IDLE = "idle"  # nothing moves ("the policy did nothing")


def _keyframes(scenario: Scenario) -> list[tuple[float, dict[str, float]]]:
    """Scripted command keypoints: (fraction of the episode, joint offsets in degrees / gripper %)."""
    rest = {"shoulder_lift": 0.0, "elbow_flex": 0.0, "shoulder_pan": 0.0, "gripper": _OPEN}
    reach = {"shoulder_lift": 20.0, "elbow_flex": -15.0, "shoulder_pan": 0.0, "gripper": _OPEN}
    grasp = {**reach, "gripper": _CLOSED}
    lifted = {"shoulder_lift": -5.0, "elbow_flex": -30.0, "shoulder_pan": 15.0, "gripper": _CLOSED}
    released = {**lifted, "gripper": _OPEN}
    pushed = {**released, "shoulder_pan": 45.0, "shoulder_lift": 15.0}
    match scenario:
        case Scenario.IDLE:
            return [(0.0, rest), (1.0, rest)]
        case Scenario.GRASP_ONLY:
            return [(0.0, rest), (0.1, rest), (0.25, reach), (0.3, grasp), (1.0, grasp)]
        case Scenario.FOLD_NO_PUSH:
            return [
                (0.0, rest),
                (0.1, rest),
                (0.25, reach),
                (0.3, grasp),
                (0.5, lifted),
                (0.55, released),
                (1.0, released),
            ]
        case Scenario.FOLD_AND_PUSH:
            return [
                (0.0, rest),
                (0.1, rest),
                (0.25, reach),
                (0.3, grasp),
                (0.5, lifted),
                (0.55, released),
                (0.65, released),
                (0.85, pushed),
                (1.0, pushed),
            ]


def scripted_signals(scenario: Scenario, n_frames: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """State and action arrays (n_frames, 12) for a scenario; state trails action and carries noise."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, n_frames)
    keys = _keyframes(scenario)
    action = np.zeros((n_frames, len(NAMES)), dtype=np.float32)
    for side_sign, side in ((1.0, "left"), (-1.0, "right")):
        for joint in JOINT_NAMES:
            xs = [k[0] for k in keys]
            ys = [k[1].get(joint, 0.0) for k in keys]
            values = np.interp(t, xs, ys)
            if joint == "shoulder_pan":
                values = values * side_sign  # the arms mirror each other
            action[:, NAMES.index(f"{side}_{joint}.pos")] = values
    state = np.concatenate([np.repeat(action[:1], _STATE_LAG_FRAMES, axis=0), action[:-_STATE_LAG_FRAMES]])
    state = state[:n_frames] + rng.normal(0.0, 0.05, size=state[:n_frames].shape).astype(np.float32)
    return state.astype(np.float32), action


def encode_code(image: np.ndarray, episode: int, frame: int, view_index: int) -> None:
    """Draw the (episode, frame, view) code into the top two cell rows of an HxWx3 image, in place."""
    cell = image.shape[1] // CODE_CELLS
    bits = [
        [(frame >> b) & 1 for b in range(CODE_CELLS)],
        [(episode >> b) & 1 for b in range(12)] + [(view_index >> b) & 1 for b in range(2)] + [1, 0],
    ]
    for row, row_bits in enumerate(bits):
        for col, bit in enumerate(row_bits):
            image[row * cell : (row + 1) * cell, col * cell : (col + 1) * cell] = 255 if bit else 0


def decode_code(image: np.ndarray) -> tuple[int, int, int]:
    """Read (episode, frame, view_index) back from a decoded frame (tolerates compression noise)."""
    cell = image.shape[1] // CODE_CELLS

    def bit(row: int, col: int) -> int:
        patch = image[
            row * cell + cell // 4 : (row + 1) * cell - cell // 4, col * cell + cell // 4 : (col + 1) * cell - cell // 4
        ]
        return int(patch.mean() > 127)

    frame = sum(bit(0, b) << b for b in range(CODE_CELLS))
    episode = sum(bit(1, b) << b for b in range(12))
    view_index = bit(1, 12) | (bit(1, 13) << 1)
    return episode, frame, view_index


def render_frame(view_index: int, episode: int, frame: int, state: np.ndarray, height: int, width: int) -> np.ndarray:
    """One synthetic camera frame: a coloured table, a cloth patch that follows the arms, and the code."""
    image = np.empty((height, width, 3), dtype=np.uint8)
    image[:] = (60 + 50 * view_index, 90, 140 - 40 * view_index)
    pan = float(state[NAMES.index("right_shoulder_pan.pos")])
    lift = float(state[NAMES.index("left_shoulder_lift.pos")])
    cloth_w = width // 3 if lift > -2.0 else width // 6  # folded cloth is half as wide
    x0 = int(np.clip(width // 3 - pan / 90.0 * width / 3, 0, width - cloth_w))
    y0 = height // 2
    image[y0 : y0 + height // 4, x0 : x0 + cloth_w] = (230, 220, 200)
    encode_code(image, episode, frame, view_index)
    return image


def write_synthetic_dataset(
    root: Path,
    scenarios: Sequence[Scenario],
    frames_per_episode: int = 60,
    height: int = 96,
    width: int = 128,
    fps: int = 30,
    task: str = "Fold the cloth",
) -> Path:
    """Write and finalise a LeRobot v3.0 dataset with one episode per scenario.

    All episodes share one MP4 per camera (h264, streaming encoding). Returns the dataset root.
    """
    from lerobot.configs.video import RGBEncoderConfig
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    features: dict[str, dict] = {
        STATE_KEY: {"dtype": "float32", "shape": (len(NAMES),), "names": list(NAMES)},
        ACTION_KEY: {"dtype": "float32", "shape": (len(NAMES),), "names": list(NAMES)},
    }
    for view in CAMERA_ROLES:
        features[camera_key(view)] = {
            "dtype": "video",
            "shape": (height, width, 3),
            "names": ["height", "width", "channels"],
        }
    dataset = LeRobotDataset.create(
        repo_id=f"synthetic/{root.name}",
        fps=fps,
        features=features,
        root=root,
        robot_type="bi_so_follower",
        use_videos=True,
        streaming_encoding=True,
        # Frames arrive unpaced here: a queue that holds a whole episode means LeRobot's streaming
        # encoder never drops one on a busy machine (it drops silently after 0.1 s when full).
        encoder_queue_maxsize=frames_per_episode + 1,
        rgb_encoder=RGBEncoderConfig(vcodec="h264"),
        video_backend="pyav",
    )
    try:
        for episode, scenario in enumerate(scenarios):
            state, action = scripted_signals(Scenario(scenario), frames_per_episode, seed=episode)
            for frame in range(frames_per_episode):
                item: dict[str, object] = {STATE_KEY: state[frame], ACTION_KEY: action[frame], "task": task}
                for view_index, view in enumerate(CAMERA_ROLES):
                    item[camera_key(view)] = render_frame(view_index, episode, frame, state[frame], height, width)
                dataset.add_frame(item)
            dataset.save_episode()
    finally:
        dataset.finalize()
    return root
