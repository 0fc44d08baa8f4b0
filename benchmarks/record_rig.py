"""What each recorder records in `record_writer --rig`: the virtual rig, teleoperated by its own classes.

    ours:    BimanualRig (both followers and leaders read together, the safety layer, three virtual
             cameras in capture threads, frames picked by timestamp): observe(), act(leader action)
    lerobot: LeRobot's BiSOLeader.get_action(), BiSOFollower.send_action() and get_observation() on
             the same emulated buses, and the latest frame of each of the same three virtual cameras

Our step survives a missed bus read by reusing the previous observation, as `ControlLoop` does, and
counts it (`missed_reads`; LeRobot's classes raise, as its recording loop would).
Each yields `step() -> (state, action, images)` for one tick and the pids that are not the recorder's
(the emulator's processes: left out of the recorder's memory).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from benchmarks.lerobot_arms import connected_lerobot_arms
from benchmarks.proc_stats import child_pid
from robot.cameras.config import CameraConfig, VirtualCameraConfig
from robot.config import BusConfig, CalibrationConfig, RigConfig
from robot.errors import MotorTimeoutError
from robot.joints import BIMANUAL_KEYS, CameraRole
from robot.safety.config import ExitMode, SafetyConfig
from robot.virtual.config import TimingMode, VirtualRigConfig

if TYPE_CHECKING:
    from robot.rig import BimanualRig, Observation

Step = Callable[[], tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]]
RIG_ID = "bench"
REALTIME_PRIORITY = RigConfig.__dataclass_fields__["realtime_priority"].default  # our loop's, as so101-record runs it
VIEWS = {"left_wrist": CameraRole.LEFT_WRIST, "right_wrist": CameraRole.RIGHT_WRIST, "overhead": CameraRole.OVERHEAD}


def rig_config(root: Path, cameras: tuple[tuple[str, int, int], ...], fps: int) -> RigConfig:
    """The virtual rig as `hardware_configs/virtual.yaml` runs it, with the benchmark's cameras."""
    return RigConfig(
        id=RIG_ID,
        calibration=CalibrationConfig(dir=root),
        bus=BusConfig(reply_timeout_ms=20, read_deadline_ms=50),
        safety=SafetyConfig(on_exit=ExitMode.HOLD),
        cameras=tuple(
            VirtualCameraConfig(name=name, view=VIEWS[name], width=width, height=height, fps=fps, phase_s=0.011 * i)
            for i, (name, height, width) in enumerate(cameras)
        ),
        virtual=VirtualRigConfig(
            runtime_dir=root / "rig", timing=TimingMode.WIRE, calibrated=True, realtime_priority=REALTIME_PRIORITY - 1
        ),
    )


def _vector(values: dict[str, float]) -> np.ndarray:
    """LeRobot's flat dict (the stock arms') as our dataset's vector."""
    return np.array([values[key] for key in BIMANUAL_KEYS], dtype=np.float32)


@contextlib.contextmanager
def rig_step(
    impl: str, root: Path, cameras: tuple[tuple[str, int, int], ...], fps: int
) -> Iterator[tuple[Step, list[int]]]:
    """The virtual rig started under `root`, stepped by `impl` ("ours" or "lerobot")."""
    from robot.rig_ports import rig_ports

    config = rig_config(root, cameras, fps)
    with rig_ports(config) as found:
        emulator = child_pid("robot.virtual.server")
        with found.client() as client:
            client.play("cloth_fold", loop=True)
        make = _ours if impl == "ours" else _lerobots
        with make(config, found.ports) as step:
            yield step, [emulator] if emulator else []


@contextlib.contextmanager
def _ours(config: RigConfig, ports: dict[str, str]) -> Iterator[Step]:
    from robot.rig import BimanualRig

    with BimanualRig(config, ports) as rig:
        yield _OursStep(rig)


class _OursStep:
    """One tick of our rig; a missed read reuses the previous observation, as `ControlLoop` does."""

    def __init__(self, rig: BimanualRig) -> None:
        self.rig = rig
        self.last: Observation | None = None
        self.missed_reads = 0

    def __call__(self) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        try:
            observation = self.rig.observe()
        except MotorTimeoutError:
            if self.last is None:
                raise
            self.missed_reads += 1
            observation = self.last
        self.last = observation
        sent = self.rig.act(observation.leader_action())
        images = {name: frame.image for name, frame in observation.frames.frames.items()}
        return observation.state().vector.astype(np.float32), sent.vector.astype(np.float32), images


def latest_only(camera: CameraConfig) -> CameraConfig:
    """The camera keeping only its latest frame, as LeRobot's cameras do."""
    return replace(camera, capture=replace(camera.capture, ring_size=2))


@contextlib.contextmanager
def _lerobots(config: RigConfig, ports: dict[str, str]) -> Iterator[Step]:
    from robot.cameras.factory import make_cameras
    from robot.cameras.virtual.joint_sources import fold_source
    from robot.rig import capture_below

    # The same cameras at the priority our rig gives its own (just below its loop's), for a like load,
    # holding what LeRobot's OpenCVCamera holds: its latest frame (our ring's least, 2: the latest and
    # the one replacing it), not the history our sync reader matches frames from.
    configs = [latest_only(capture_below(camera, config.realtime_priority)) for camera in config.cameras]
    with contextlib.ExitStack() as stack:
        follower, leader = stack.enter_context(connected_lerobot_arms(config.id, config.calibration.dir, ports))
        running = make_cameras(configs, joint_source=fold_source())
        for camera in running.values():
            stack.enter_context(camera)

        def step() -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
            action = leader.get_action()
            sent = follower.send_action(action)
            observation = follower.get_observation()
            images = {name: camera.latest().image for name, camera in running.items()}
            return _vector(observation), _vector(sent), images

        yield step
