"""Shared helpers for the dataset tests: tiny specs, deterministic frames, disk snapshots, loading back."""

import hashlib
import multiprocessing
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from teleop.dataset.faults import ENV
from teleop.dataset.spec import WriterSpec

CAMERAS = (("left_wrist", 48, 64), ("right_wrist", 48, 64), ("overhead", 48, 64))
TASK = "Fold the cloth"


def spec(root: Path, **overrides: object) -> WriterSpec:
    """A small h264 spec (fast to encode) for a dataset at `root`."""
    values = {"root": root, "repo_id": "test/fold", "fps": 30, "cameras": CAMERAS, "vcodec": "h264", "resume": True}
    values.update(overrides)
    return WriterSpec(**values)


def frame(episode: int, index: int, cameras: tuple = CAMERAS) -> tuple:
    """A deterministic frame: state/action encode (episode, index); images change every frame."""
    joints = np.arange(12, dtype=np.float32)
    state = joints + 1000 * episode + index
    action = -state
    images = {}
    for number, (name, height, width) in enumerate(cameras):
        image = np.zeros((height, width, 3), np.uint8)
        image[:, :, number] = 40 + 4 * index
        image[(index * 3) % height :, : width // 2, (number + 1) % 3] = 200
        images[name] = image
    timing = {"bus_read_s": 0.002 + index * 1e-6, f"{cameras[0][0]}.capture_s": 100.0 + index / 30}
    return state, action, images, timing


def record(dataset: object, episode: int, frames: int) -> object:
    """Record and save one episode through a DurableDataset or DatasetWriter; returns SavedEpisode."""
    dataset.begin_episode(TASK)
    for index in range(frames):
        dataset.add_frame(*frame(episode, index))
    return dataset.save_episode({"episode": episode, "achieved_fps": np.float64(29.97), "keep": True})


def record_logged(dataset: object, episode: int, frames: int) -> None:
    """Record and save one episode whose timing facts log each frame's joint states, as the recorder's do."""
    from robot.joints import BIMANUAL_KEYS

    dataset.begin_episode(TASK)
    for index in range(frames):
        state, action, images, timing = frame(episode, index)
        logged = {f"state.{key}": float(value) for key, value in zip(BIMANUAL_KEYS, state, strict=True)}
        dataset.add_frame(state, action, images, {**timing, **logged})
    dataset.save_episode({"episode": episode, "frames": frames, "verdict": "keep", "achieved_fps": 30.0})


def snapshot(root: Path) -> dict[str, str]:
    """sha256 of every file under root, by relative path."""
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def tree(root: Path) -> dict[str, str]:
    """Every path under root, the root itself included: sha256 of a file's bytes, "dir" for a directory.

    Stricter than `snapshot`: a directory made or removed (even an empty one) shows too.
    """
    entries = {".": "dir"}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if path.is_symlink():
            entries[relative] = f"link to {os.readlink(path)}"
        elif path.is_dir():
            entries[relative] = "dir"
        else:
            entries[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return entries


def write_lerobot_dataset(root: Path, frames: int) -> None:
    """A one-episode dataset written by LeRobot itself (as lerobot-record writes one): no journal of ours."""
    from lerobot.configs import RGBEncoderConfig
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    from teleop.dataset.features import dataset_features

    # h264: in a root test process, SVT-AV1 would make the calling thread SCHED_FIFO 99.
    theirs = LeRobotDataset.create(
        "test/fold",
        30,
        dataset_features(CAMERAS),
        root=root,
        robot_type="bi_so_follower",
        rgb_encoder=RGBEncoderConfig(vcodec="h264"),
    )
    for index in range(frames):
        state, action, images, _ = frame(0, index)
        theirs.add_frame(
            {"observation.state": state, "action": action, "task": TASK}
            | {f"observation.images.{name}": image for name, image in images.items()}
        )
    theirs.save_episode(parallel_encoding=False)  # no fork from the test process
    theirs.finalize()


def run_killed(target: Callable[[], None], fault: str, timeout_s: float = 120.0) -> int:
    """Run `target` in a forked child with a fault armed; returns its exit code (-9 when killed)."""
    context = multiprocessing.get_context("fork")  # the test process already has LeRobot imported
    process = context.Process(target=_armed, args=(target, fault))
    process.start()
    process.join(timeout_s)
    if process.is_alive():
        process.kill()
        process.join()
        raise AssertionError(f"child with fault {fault!r} did not finish in {timeout_s} s")
    return process.exitcode


def _armed(target: Callable[[], None], fault: str) -> None:
    os.environ[ENV] = fault
    target()


def load(root: Path) -> object:
    """Load a dataset the way a trainer would."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    return LeRobotDataset("test/fold", root=root, video_backend="pyav")


def check_loads(root: Path, lengths: list[int]) -> None:
    """LeRobot loads the dataset with these episode lengths, and every value is what was recorded."""
    from teleop.dataset.lerobot_adapter import video_frame_count

    dataset = load(root)
    assert dataset.num_episodes == len(lengths)
    assert dataset.num_frames == sum(lengths)
    episodes = dataset.meta.episodes
    assert [episodes[i]["length"] for i in range(len(lengths))] == lengths
    data = dataset.hf_dataset.with_format("numpy")
    for episode, length in enumerate(lengths):
        start = sum(lengths[:episode])
        for index in (0, length - 1):
            state, action, _, _ = frame(episode, index)
            np.testing.assert_array_equal(data[start + index]["observation.state"], state)
            np.testing.assert_array_equal(data[start + index]["action"], action)
        for name, _, _ in CAMERAS:
            key = f"observation.images.{name}"
            path = root / dataset.meta.get_video_file_path(episode, key)
            assert video_frame_count(path) == length
    # Decoded frames: videos open, and the frame at each index is the one recorded there.
    for episode, length in enumerate(lengths):
        for index in (0, length - 1):
            image = dataset[sum(lengths[:episode]) + index]["observation.images.overhead"]
            assert image.shape == (3, CAMERAS[2][1], CAMERAS[2][2])
            right_half = image[2, :, CAMERAS[2][2] // 2 :].numpy() * 255
            assert abs(float(np.median(right_half)) - (40 + 4 * index)) < 10
