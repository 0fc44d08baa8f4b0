"""A camera's name and image size, in the order images are indexed (height, then width).

One type for what the dataset writer, the policy contract and the remote policy server are told
about each camera; it was a bare `(name, h, w)` tuple defined four times, in the opposite order to
the camera configs' `width`, `height`. A NamedTuple: a literal `("overhead", 480, 640)` still is one.
"""

from typing import NamedTuple, Protocol


class _SizedCamera(Protocol):
    name: str
    width: int
    height: int


class CameraShape(NamedTuple):
    """A camera's name and frame size in pixels (numpy's order: rows, then columns)."""

    name: str
    height: int
    width: int

    @classmethod
    def of(cls, camera: _SizedCamera) -> "CameraShape":
        """The shape of a camera config (OpenCVCameraConfig, VirtualCameraConfig)."""
        return cls(camera.name, camera.height, camera.width)


def camera_shapes(cameras: "tuple[_SizedCamera, ...] | list[_SizedCamera]") -> tuple[CameraShape, ...]:
    """The shapes of a rig's cameras, in the rig file's order."""
    return tuple(CameraShape.of(camera) for camera in cameras)
