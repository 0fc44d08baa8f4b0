"""Deploy loop, LeRobot's side: lerobot-rollout's base strategy with sync inference on the virtual rig.

Holds the plugin camera (`VirtualRigCameraConfig`, `VirtualRigCamera`: LeRobot's `Camera` interface
over one of our virtual cameras) and `run_lerobot`, which benchmarks/deploy_loop.py runs in a child
process (`--child lerobot ...`). LeRobot is imported here and nowhere else in the deploy loop.
"""

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from lerobot.cameras import Camera as LeRobotCamera
from lerobot.cameras import CameraConfig as LeRobotCameraConfig

from benchmarks.deploy_loop_trace import (
    FPS,
    MAX_WARMUP_S,
    TASK,
    Trace,
    cpu_s,
    follower_ports,
    process_facts,
    rig_config,
    stop_after,
    tick_stats,
)
from benchmarks.rig_loop import RIG_ID
from robot.cameras.camera import Camera
from robot.joint_values import JointValues


@dataclass
class FollowerPose:
    """The followers' last read joints, for LeRobot's side's virtual cameras to render."""

    positions: JointValues

    def get(self) -> JointValues:
        return self.positions


class SharedCamera:
    """One of our cameras inside a LeRobot config: copies of the config share it (lerobot-record's
    `asdict(cfg)` deep-copies every config, and a camera holds threads and locks)."""

    def __init__(self, camera: Camera) -> None:
        self.camera = camera

    def __deepcopy__(self, memo: dict) -> "SharedCamera":
        return self


@LeRobotCameraConfig.register_subclass("so101_virtual")
@dataclass(kw_only=True)
class VirtualRigCameraConfig(LeRobotCameraConfig):
    """LeRobot camera config for one of our virtual cameras (only built in code, never parsed)."""

    camera: SharedCamera | None = None  # our robot.cameras Camera, not yet connected


# LeRobot finds a plugin camera's class from its config's module (`make_device_from_device_class`:
# "<pkg>.config_<x>" -> "<pkg>"): "benchmarks.deploy_loop_lerobot.config_virtual_rig_camera" sends
# it to this module, which holds VirtualRigCamera. This file is always imported (never __main__).
VirtualRigCameraConfig.__module__ = f"{__name__}.config_virtual_rig_camera"


class VirtualRigCamera(LeRobotCamera):
    """LeRobot's camera interface over one of our virtual cameras (its capture thread renders)."""

    def __init__(self, config: VirtualRigCameraConfig) -> None:
        super().__init__(config)
        if config.camera is None:
            raise ValueError("VirtualRigCameraConfig needs camera=SharedCamera(<our camera>)")
        self.camera: Camera = config.camera.camera

    @property
    def is_connected(self) -> bool:
        return self.camera.is_connected

    @staticmethod
    def find_cameras() -> list[dict[str, Any]]:
        return []

    def connect(self, warmup: bool = True) -> None:
        self.camera.connect()

    def read(self) -> np.ndarray:
        return self.async_read()

    def async_read(self, timeout_ms: float = 200) -> np.ndarray:
        if not self.camera.wait_for_frame_after(time.monotonic(), timeout_ms / 1000):
            raise TimeoutError(f"virtual camera {self.camera.name}: no new frame within {timeout_ms} ms")
        return self.camera.latest().image

    def read_latest(self, max_age_ms: int = 500) -> np.ndarray:
        return self.camera.latest().image

    def disconnect(self) -> None:
        self.camera.disconnect()


def run_lerobot(checkpoint: Path, root: Path, seconds: float, height: int, width: int) -> dict[str, Any]:
    """lerobot-rollout's base strategy with sync inference on the virtual rig, timed from outside its loop."""
    from threading import Event

    from lerobot.configs import PreTrainedConfig
    from lerobot.robots.bi_so_follower import BiSOFollowerConfig
    from lerobot.robots.so_follower import SOFollowerConfig
    from lerobot.rollout import RolloutConfig, build_rollout_context, create_strategy
    from lerobot.rollout.configs import BaseStrategyConfig
    from lerobot.rollout.inference import SyncInferenceConfig
    from lerobot.rollout.robot_wrapper import ThreadSafeRobot

    from robot.cameras.factory import make_cameras
    from robot.cameras.virtual.joint_sources import ready_pose

    config = rig_config(root, height, width)
    ports = follower_ports(config)
    pose = FollowerPose(ready_pose())  # until the first observation
    ours = make_cameras(config.cameras, joint_source=pose.get)  # one scene, one epoch, as in our rig
    lerobot_cameras = {
        name: VirtualRigCameraConfig(camera=SharedCamera(camera), width=width, height=height, fps=FPS)
        for name, camera in ours.items()
    }
    robot = BiSOFollowerConfig(
        id=RIG_ID,
        calibration_dir=root / "robots" / "so_follower",
        left_arm_config=SOFollowerConfig(port=ports["left_follower"], cameras={"wrist": lerobot_cameras["left_wrist"]}),
        right_arm_config=SOFollowerConfig(
            port=ports["right_follower"], cameras={"wrist": lerobot_cameras["right_wrist"]}
        ),
        cameras={"overhead": lerobot_cameras["overhead"]},
    )
    policy = PreTrainedConfig.from_pretrained(checkpoint)
    policy.pretrained_path = str(checkpoint)  # what RolloutConfig sets from --policy.path
    cfg = RolloutConfig(
        robot=robot,
        policy=policy,
        strategy=BaseStrategyConfig(),
        inference=SyncInferenceConfig(),
        fps=FPS,
        duration=seconds + MAX_WARMUP_S,  # a backstop: the shutdown event ends the run `seconds` after the first action
        device="cpu",
        task=TASK,
        return_to_initial_position=False,
    )
    trace = Trace(inline_chunks=True)

    class TimedRobot(ThreadSafeRobot):
        def get_observation(self) -> dict[str, Any]:
            trace.start_s.append(time.perf_counter())
            observation = super().get_observation()
            trace.observe_s.append(time.perf_counter() - trace.start_s[-1])
            pose.positions = JointValues.from_flat(observation)  # LeRobot's flat keys, ours in
            return observation

        def send_action(self, action: Any) -> Any:
            sent = super().send_action(action)
            trace.work_end_s.append(time.perf_counter())
            if len(trace.work_end_s) == 1:  # the first action: the measured window starts
                stop_after(seconds, shutdown.set)
            trace.starved.append(False)
            trace.acted.append(True)
            return sent

    shutdown = Event()  # what lerobot-rollout's signal handler sets on Ctrl-C
    ctx = build_rollout_context(cfg, shutdown)
    ctx.hardware.robot_wrapper = TimedRobot(ctx.hardware.robot_wrapper.inner)
    model = ctx.policy.policy
    predict_action_chunk = model.predict_action_chunk

    def timed_chunk(*args: Any, **kwargs: Any) -> Any:
        begin = time.perf_counter()
        actions = predict_action_chunk(*args, **kwargs)
        trace.chunks.append((begin, time.perf_counter() - begin))
        return actions

    model.predict_action_chunk = timed_chunk  # as build_rollout_context does for torch.compile
    strategy = create_strategy(cfg.strategy)
    before = cpu_s()
    try:
        strategy.setup(ctx)
        strategy.run(ctx)
        facts = process_facts(before)  # while its threads still run
    finally:
        strategy.teardown(ctx)  # stops the engine, disconnects the robot and its cameras
    return {
        "side": "LeRobot sync (lerobot-rollout)",
        **tick_stats(trace),
        **facts,
        "chunk_size": model.config.chunk_size,
    }
