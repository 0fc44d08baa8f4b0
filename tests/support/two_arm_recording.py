"""A two-arm dataset whose arms take turns, filmed by the virtual rig's cameras: what the data-bug checks read.

The virtual rig's scripted demonstration moves the arms as mirror images in step (each at the same
speed at the same moment), which no camera-swap check can see through; a person's demonstration is
not that tidy. Here each arm reaches for the cloth and back on its own schedule, overlapping the
other's. The followers answer their leaders about as SO-101 servos do on the virtual rig (its fitted
servo model trails by 4.3-4.6 frames at 30 fps; these by ~3.9): DELAY_FRAMES late (the state is read
before the action is sent, and the servo's bus latency), then a first-order lag of LAG_S, on the
servo's step grid. Every frame of the three views is rendered
from the followers' state by robot/cameras/virtual, the rig's own renderer, and the rig's log of
each frame (`state.*`, `action.*`) is kept beside each episode as so101-record keeps it.

    write_two_arm_recording(root)   # EPISODES episodes of FRAMES frames at FPS, cameras 96x128, h264
"""

from pathlib import Path

import numpy as np

from robot.cameras.virtual.scene import VirtualScene
from robot.cameras.virtual.views import make_renderer
from robot.joint_values import JointValues
from robot.joints import BIMANUAL_KEYS, CAMERA_ROLES, JOINT_NAMES, CameraRole, Side
from teleop.dataset.sidecar import write_timing
from teleop.dataset.vocabulary import camera_key

FPS = 30
FRAMES = 90  # 3 s per episode
EPISODES = 2
HEIGHT, WIDTH = 96, 128
DELAY_FRAMES = 2  # a frame for the state read before the action is sent, one for the servo's ~40 ms latency
LAG_S = 0.08  # the followers' first-order lag after that delay, s
STEP_DEG = 360.0 / 4096  # the servo's position step: states are read on this grid
TREMOR_DEG = 0.15  # the leader hand's noise, degrees

# shoulder_pan, shoulder_lift, elbow_flex, wrist_flex, wrist_roll (degrees), gripper (% open); the
# right arm mirrors pan and roll. From the virtual cameras' scripted fold (joint_sources.py).
_READY = np.array([16.6, -60.8, 0.9, 100.0, 0.0, 10.0])
_ABOVE = np.array([51.8, -15.9, 29.6, 66.6, 0.0, 80.0])
_DOWN = np.array([40.0, 6.4, 35.7, 43.8, 20.0, 5.0])
_MIRROR = np.array([-1.0 if joint in ("shoulder_pan", "wrist_roll") else 1.0 for joint in JOINT_NAMES])
# Each arm's schedule: (seconds, pose), per episode; the arms take turns, overlapping a little.
_SCHEDULES: dict[Side, tuple[tuple[tuple[float, np.ndarray], ...], ...]] = {
    Side.LEFT: (
        ((0.0, _READY), (0.2, _READY), (0.9, _ABOVE), (1.3, _DOWN), (1.8, _READY), (3.0, _READY)),
        ((0.0, _READY), (1.2, _READY), (1.8, _DOWN), (2.4, _ABOVE), (3.0, _ABOVE)),
    ),
    Side.RIGHT: (
        ((0.0, _READY), (1.4, _READY), (2.0, _ABOVE), (2.5, _DOWN), (3.0, _DOWN)),
        ((0.0, _READY), (0.6, _ABOVE), (1.1, _DOWN), (1.6, _READY), (3.0, _READY)),
    ),
}


def leader_actions(episode: int, seed: int = 0) -> np.ndarray:
    """(FRAMES, 12) leader positions: each arm eased between its poses, plus a hand's tremor."""
    times_s = np.arange(FRAMES) / FPS
    rng = np.random.default_rng(seed + episode)
    columns = []
    for side in Side:
        keys = _SCHEDULES[side][episode % len(_SCHEDULES[side])]
        at = np.array([t for t, _ in keys])
        poses = np.stack([pose * (_MIRROR if side is Side.RIGHT else 1.0) for _, pose in keys])
        segment = np.clip(np.searchsorted(at, times_s, side="right") - 1, 0, len(at) - 2)
        s = np.clip((times_s - at[segment]) / (at[segment + 1] - at[segment]), 0.0, 1.0)
        eased = (s**3 * (10 - 15 * s + 6 * s**2))[:, None]  # minimum jerk, as a hand moves
        columns.append(poses[segment] + eased * (poses[segment + 1] - poses[segment]))
    actions = np.concatenate(columns, axis=1)
    return (actions + rng.normal(0.0, TREMOR_DEG, actions.shape)).astype(np.float32)


def follower_states(actions: np.ndarray) -> np.ndarray:
    """(FRAMES, 12) follower readings: DELAY_FRAMES late, then a first-order lag of LAG_S, on the step grid."""
    gain = 1.0 - np.exp(-1.0 / (FPS * LAG_S))
    states = np.empty_like(actions, dtype=np.float64)
    states[0] = actions[0]
    for frame in range(1, len(actions)):
        goal = actions[max(0, frame - DELAY_FRAMES)]
        states[frame] = states[frame - 1] + gain * (goal - states[frame - 1])
    return (np.round(states / STEP_DEG) * STEP_DEG).astype(np.float32)


def render_views(states: np.ndarray) -> dict[str, np.ndarray]:
    """Each view's (FRAMES, HEIGHT, WIDTH, 3) frames of the followers at these states, by the rig's renderer."""
    positions = [JointValues.from_vector(states[0])]
    now_s = [0.0]
    scene = VirtualScene(lambda: positions[0], clock=lambda: now_s[0])
    renderers = {view: make_renderer(CameraRole(view), scene.layout, WIDTH, HEIGHT) for view in CAMERA_ROLES}
    frames: dict[str, list[np.ndarray]] = {view: [] for view in CAMERA_ROLES}
    for index, state in enumerate(states):
        positions[0] = JointValues.from_vector(state)
        now_s[0] = index / FPS
        observed = scene.observe()
        for view, render in renderers.items():
            frames[view].append(render(observed))
    return {view: np.stack(images) for view, images in frames.items()}


def write_two_arm_recording(root: Path) -> Path:
    """Write and finalise the dataset at `root` (LeRobot's writer, as so101-record's); returns `root`."""
    from lerobot.configs.video import RGBEncoderConfig
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    joints = {"dtype": "float32", "shape": (len(BIMANUAL_KEYS),), "names": list(BIMANUAL_KEYS)}
    camera = {"dtype": "video", "shape": (HEIGHT, WIDTH, 3), "names": ["height", "width", "channels"]}
    features = {"observation.state": joints, "action": joints, **{camera_key(view): camera for view in CAMERA_ROLES}}
    dataset = LeRobotDataset.create(
        repo_id=f"test/{root.name}",
        fps=FPS,
        features=features,
        root=root,
        robot_type="bi_so_follower",
        use_videos=True,
        streaming_encoding=True,
        encoder_queue_maxsize=FRAMES + 1,  # a whole episode: the streaming encoder never drops a frame
        rgb_encoder=RGBEncoderConfig(vcodec="h264"),
        video_backend="pyav",
    )
    logs = []
    try:
        for episode in range(EPISODES):
            actions = leader_actions(episode)
            states = follower_states(actions)
            views = render_views(states)
            for frame in range(FRAMES):
                item: dict[str, object] = {"observation.state": states[frame], "action": actions[frame]}
                item |= {camera_key(view): views[view][frame] for view in CAMERA_ROLES}
                dataset.add_frame({**item, "task": "Fold the cloth"})
            dataset.save_episode()
            logs.append(
                [
                    {f"state.{k}": float(s) for k, s in zip(BIMANUAL_KEYS, states[frame], strict=True)}
                    | {f"action.{k}": float(a) for k, a in zip(BIMANUAL_KEYS, actions[frame], strict=True)}
                    for frame in range(FRAMES)
                ]
            )
    finally:
        dataset.finalize()
    for episode, rows in enumerate(logs):  # the rig's own log, beside the dataset (teleop/dataset/sidecar.py)
        write_timing(root, episode, rows)
    return root
