"""Cameras from configs: the one place that knows every kind.

Cameras come back unconnected; connect them together so that a failure rolls back:

    cameras = make_cameras(configs, joint_source=follower_positions)  # {name: Camera}
    with contextlib.ExitStack() as stack:
        for camera in cameras.values():
            stack.enter_context(camera)
"""

import time
from collections.abc import Sequence

from robot.cameras.camera import Camera
from robot.cameras.config import CameraConfig, OpenCVCameraConfig, VirtualCameraConfig
from robot.cameras.errors import CameraConfigError
from robot.cameras.opencv_camera import OpenCVCamera
from robot.cameras.virtual.camera import VirtualCamera
from robot.cameras.virtual.scene import JointSource, VirtualScene


def make_camera(config: CameraConfig, scene: VirtualScene | None = None, epoch_s: float | None = None) -> Camera:
    """One camera (not yet connected) for `config`.

    Args:
        config: the camera's config.
        scene: the virtual rig's scene, shared by all virtual cameras; required for kind "virtual".
        epoch_s: monotonic time the virtual cameras' phases count from (None: each camera's connect).

    Raises:
        CameraConfigError: a virtual camera without a scene.
    """
    match config:
        case OpenCVCameraConfig():
            return OpenCVCamera(config)
        case VirtualCameraConfig():
            if scene is None:
                raise CameraConfigError(
                    config.name,
                    "a virtual camera needs the virtual rig's joint-state source",
                    "build cameras with make_cameras(configs, joint_source=...)",
                )
            return VirtualCamera(config, scene, epoch_s)
        case _:
            raise CameraConfigError(str(getattr(config, "name", "?")), f"unknown camera config {config!r}")


def make_cameras(
    configs: Sequence[CameraConfig], joint_source: JointSource | None = None, epoch_s: float | None = None
) -> dict[str, Camera]:
    """Cameras by name (not yet connected); virtual ones share one scene and one epoch.

    Raises:
        CameraConfigError: two cameras with one name, or virtual cameras without `joint_source`.
    """
    names = [config.name for config in configs]
    for name in names:
        if names.count(name) > 1:
            raise CameraConfigError(
                name, f"name={name!r} is used by {names.count(name)} cameras; expected unique names"
            )
    needs_scene = any(isinstance(config, VirtualCameraConfig) for config in configs)
    scene = VirtualScene(joint_source) if needs_scene and joint_source is not None else None
    epoch_s = time.monotonic() if epoch_s is None else epoch_s
    return {config.name: make_camera(config, scene, epoch_s) for config in configs}
