"""Camera configs: validation names the field, the value and what is allowed; one factory."""

import pytest

from robot.cameras.config import (
    CameraKind,
    CaptureConfig,
    OpenCVCameraConfig,
    VirtualCameraConfig,
    camera_config_from_dict,
)
from robot.cameras.errors import CameraConfigError
from robot.cameras.factory import make_camera, make_cameras
from robot.cameras.opencv_camera import OpenCVCamera
from robot.cameras.virtual.camera import VirtualCamera
from robot.cameras.virtual.joint_sources import constant_source
from robot.joints import CameraRole
from tests.robot.cameras.camera_test_support import virtual_config


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"fps": 0.0}, "fps=0.0 is not allowed; expected frames per second in (0, 240]"),
        ({"width": 8}, "width=8 is not allowed; expected an int in 16..7680 pixels"),
        ({"phase_s": 0.05}, "phase_s=0.05 is not allowed; expected seconds in [0, 0.0333)"),
        ({"jitter_s": 0.02}, "jitter_s=0.02 is not allowed; expected seconds in [0, 0.0167)"),
        ({"drop_rate": 1.0}, "drop_rate=1.0 is not allowed; expected a probability in [0, 1)"),
        ({"freeze_after_s": -1.0}, "freeze_after_s=-1.0 is not allowed"),
        ({"view": "ceiling"}, "view='ceiling' is not allowed; expected one of"),
        ({"capture": CaptureConfig(max_frame_age_s=0)}, "capture.max_frame_age_s=0 is not allowed"),
        ({"capture": CaptureConfig(ring_size=1)}, "capture.ring_size=1 is not allowed; expected an int >= 2"),
        ({"capture": CaptureConfig(history_s=0)}, "capture.history_s=0 is not allowed; expected seconds in (0, 10]"),
    ],
)
def test_virtual_config_validation_names_field_value_and_allowed(overrides: dict, expected: str) -> None:
    with pytest.raises(CameraConfigError) as raised:
        VirtualCameraConfig(name="overhead", **overrides)
    assert "camera 'overhead'" in str(raised.value)
    assert expected in str(raised.value)


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"fourcc": "MJPEG"}, "fourcc='MJPEG' is not allowed; expected 4 characters"),
        ({"device": ""}, "device='' is not allowed"),
        ({"height": 10_000}, "height=10000 is not allowed"),
        ({"kind": CameraKind.VIRTUAL}, "kind=<CameraKind.VIRTUAL: 'virtual'> is not allowed; expected 'opencv'"),
    ],
)
def test_opencv_config_validation(overrides: dict, expected: str) -> None:
    fields = {"name": "left_wrist", "device": "/dev/video0", **overrides}
    with pytest.raises(CameraConfigError, match="camera 'left_wrist'") as raised:
        OpenCVCameraConfig(**fields)
    assert expected in str(raised.value)


def test_config_from_a_rig_file_entry() -> None:
    opencv = camera_config_from_dict({"kind": "opencv", "name": "overhead", "device": "/dev/video2", "fps": 30})
    assert opencv == OpenCVCameraConfig(name="overhead", device="/dev/video2")
    virtual = camera_config_from_dict(
        {"kind": "virtual", "name": "left_wrist", "view": "left_wrist", "capture": {"max_frame_age_s": 0.5}}
    )
    assert virtual.view is CameraRole.LEFT_WRIST
    assert virtual.capture.max_frame_age_s == 0.5
    with pytest.raises(CameraConfigError, match="kind='usb' is not allowed"):
        camera_config_from_dict({"kind": "usb", "name": "x"})
    with pytest.raises(CameraConfigError, match=r"unknown field\(s\) \['resolution'\]"):
        camera_config_from_dict({"kind": "opencv", "name": "x", "device": "0", "resolution": "vga"})
    with pytest.raises(CameraConfigError, match=r"unknown capture field\(s\) \['timeout'\]"):
        camera_config_from_dict({"kind": "virtual", "name": "x", "capture": {"timeout": 1}})


def test_factory_builds_each_kind() -> None:
    configs = [
        virtual_config("overhead"),
        virtual_config("left_wrist", view=CameraRole.LEFT_WRIST),
        OpenCVCameraConfig(name="right_wrist", device="/dev/video4"),
    ]
    cameras = make_cameras(configs, joint_source=constant_source())
    assert list(cameras) == ["overhead", "left_wrist", "right_wrist"]
    assert isinstance(cameras["overhead"], VirtualCamera)
    assert isinstance(cameras["right_wrist"], OpenCVCamera)
    assert not any(camera.is_connected for camera in cameras.values())


def test_factory_refuses_duplicates_and_virtual_cameras_without_a_joint_source() -> None:
    with pytest.raises(CameraConfigError, match="name='a' is used by 2 cameras"):
        make_cameras([virtual_config("a"), virtual_config("a")], joint_source=constant_source())
    with pytest.raises(CameraConfigError, match="joint-state source"):
        make_camera(virtual_config("a"))
