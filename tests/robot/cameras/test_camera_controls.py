"""Exposure, gain and focus: validated in the rig file, applied after the format, read back; one ignored is a warning.

The camera is a fake below OpenCV's `VideoCapture` seam that behaves as V4L2 drivers do: a control it
lacks is refused (set returns False, get -1), a value is rounded to the control's step, and some
drivers take a value and keep their own while an auto mode is on. What is sent, in which order, and
what the product says about it are the behaviour under test; the capture thread around it is the
product's own (test_opencv_camera.py explains the seam).
"""

import logging
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np
import pytest

from robot.cameras.config import CaptureConfig, OpenCVCameraConfig, camera_config_from_dict
from robot.cameras.errors import CameraConfigError
from robot.cameras.opencv_camera import OpenCVCamera, OpenCVFrameSource
from robot.cli import UsageError, parse_command
from robot.config import RigConfig
from robot.setup.rig_file import TEMPLATE_RIG_FILE, write_rig_section

FAST = CaptureConfig(reconnect_attempts=0)
CONTROLS = {
    cv2.CAP_PROP_EXPOSURE,
    cv2.CAP_PROP_AUTO_EXPOSURE,
    cv2.CAP_PROP_GAIN,
    cv2.CAP_PROP_FOCUS,
    cv2.CAP_PROP_AUTOFOCUS,
}
UVC_CONTROLS = {  # prop: (min, max, step, the camera's own value)
    cv2.CAP_PROP_AUTO_EXPOSURE: (1, 3, 2, 3),  # V4L2 exposure_auto: 1 manual, 3 aperture priority (auto)
    cv2.CAP_PROP_EXPOSURE: (3, 2047, 1, 250),
    cv2.CAP_PROP_GAIN: (0, 255, 1, 64),
    cv2.CAP_PROP_AUTOFOCUS: (0, 1, 1, 1),
    cv2.CAP_PROP_FOCUS: (0, 250, 5, 30),
}


class ControlCamera:
    """A 640x480 MJPG 30 fps camera with `controls`; `ignored`: props it accepts and leaves as they were."""

    def __init__(self, controls: dict[int, tuple[float, float, float, float]], ignored: frozenset[int] = frozenset()):
        self.controls = controls
        self.values = {prop: spec[3] for prop, spec in controls.items()}
        self.ignored = ignored
        self.sets: list[tuple[int, float]] = []

    def open(self, device: object, backend: int) -> "ControlCapture":
        return ControlCapture(self)


class ControlCapture:
    def __init__(self, camera: ControlCamera) -> None:
        self.camera = camera

    def isOpened(self) -> bool:  # noqa: N802 (OpenCV's name)
        return True

    def set(self, prop: int, value: float) -> bool:
        self.camera.sets.append((prop, value))
        if prop not in CONTROLS:
            return True  # format, size, rate: this camera has 640x480 MJPG at 30 fps
        if prop not in self.camera.controls:
            return False
        low, high, step, _ = self.camera.controls[prop]
        if prop not in self.camera.ignored:
            self.camera.values[prop] = min(high, max(low, low + round((value - low) / step) * step))
        return True

    def get(self, prop: int) -> float:
        format_and_size = {
            cv2.CAP_PROP_FOURCC: float(cv2.VideoWriter.fourcc(*"MJPG")),
            cv2.CAP_PROP_FRAME_WIDTH: 640.0,
            cv2.CAP_PROP_FRAME_HEIGHT: 480.0,
            cv2.CAP_PROP_FPS: 30.0,
        }
        if prop in format_and_size:
            return format_and_size[prop]
        return float(self.camera.values.get(prop, -1.0))

    def grab(self) -> bool:
        return True

    def retrieve(self) -> tuple[bool, np.ndarray | None]:
        return True, np.zeros((480, 640, 3), np.uint8)

    def release(self) -> None:
        pass


def config(**controls: float) -> OpenCVCameraConfig:
    return OpenCVCameraConfig(name="overhead", device="0", capture=FAST, **controls)  # type: ignore[arg-type]


def control_sets(camera: ControlCamera) -> list[tuple[int, float]]:
    return [(prop, value) for prop, value in camera.sets if prop in CONTROLS]


def test_without_settings_no_control_is_touched(caplog: pytest.LogCaptureFixture) -> None:
    camera = ControlCamera(UVC_CONTROLS)
    with caplog.at_level(logging.INFO):
        OpenCVFrameSource(config(), camera.open).open()
    assert control_sets(camera) == []
    assert camera.values == {prop: spec[3] for prop, spec in UVC_CONTROLS.items()}  # the camera's auto settings
    assert "set to" not in caplog.text


def test_each_setting_turns_its_auto_mode_off_first_then_is_set_after_the_format(caplog) -> None:
    camera = ControlCamera(UVC_CONTROLS)
    with caplog.at_level(logging.INFO):
        OpenCVFrameSource(config(exposure=150, gain=20, focus=12), camera.open).open()
    assert control_sets(camera) == [
        (cv2.CAP_PROP_AUTO_EXPOSURE, 1.0),  # manual exposure
        (cv2.CAP_PROP_EXPOSURE, 150.0),
        (cv2.CAP_PROP_GAIN, 20.0),
        (cv2.CAP_PROP_AUTOFOCUS, 0.0),
        (cv2.CAP_PROP_FOCUS, 12.0),
    ]
    props = [prop for prop, _ in camera.sets]
    assert props.index(cv2.CAP_PROP_FPS) < props.index(cv2.CAP_PROP_AUTO_EXPOSURE)  # after the format and rate
    assert camera.values[cv2.CAP_PROP_FOCUS] == 10  # the driver's step is 5: rounded, and that counts as applied
    assert "WARNING" not in caplog.text
    assert "camera 'overhead': exposure set to 150" in caplog.text
    assert "camera 'overhead': focus set to 10" in caplog.text


def test_a_camera_without_focus_warns_naming_the_field_and_still_streams(caplog) -> None:
    no_motor = (cv2.CAP_PROP_FOCUS, cv2.CAP_PROP_AUTOFOCUS)
    fixed_focus = ControlCamera({prop: spec for prop, spec in UVC_CONTROLS.items() if prop not in no_motor})
    with caplog.at_level(logging.WARNING), OpenCVCamera(config(focus=40, gain=10), fixed_focus.open) as camera:
        frame = camera.latest()
    assert frame.image.shape == (480, 640, 3)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].startswith(
        "camera 'overhead': focus=40 was not applied: the driver refused turning autofocus off and reports -1"
    )
    assert "v4l2-ctl -d 0 --list-ctrls" in warnings[0]
    assert fixed_focus.values[cv2.CAP_PROP_GAIN] == 10  # the others are applied


def test_a_driver_that_keeps_its_own_value_is_named(caplog: pytest.LogCaptureFixture) -> None:
    stubborn = ControlCamera(UVC_CONTROLS, ignored=frozenset({cv2.CAP_PROP_EXPOSURE}))
    with caplog.at_level(logging.WARNING):
        OpenCVFrameSource(config(exposure=150), stubborn.open).open()
    assert "camera 'overhead': exposure=150 was not applied: the driver changed it and reports 250" in caplog.text


def test_a_driver_that_refuses_manual_exposure_is_named(caplog: pytest.LogCaptureFixture) -> None:
    auto_only = ControlCamera({p: s for p, s in UVC_CONTROLS.items() if p != cv2.CAP_PROP_AUTO_EXPOSURE})
    with caplog.at_level(logging.WARNING):
        OpenCVFrameSource(config(exposure=150), auto_only.open).open()
    assert "exposure=150 was not applied: the driver refused manual exposure" in caplog.text


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"exposure": 0}, "exposure=0 is not allowed; expected 100 µs units in (0, 333.333] (one frame at 30 fps)"),
        ({"exposure": 400}, "exposure=400 is not allowed"),  # 40 ms: longer than a 33 ms frame
        ({"exposure": 700, "fps": 15.0}, "expected 100 µs units in (0, 666.667]"),
        ({"gain": -1}, "gain=-1 is not allowed; expected the driver's units in [0, 65535]"),
        ({"focus": 70000}, "focus=70000 is not allowed"),
        ({"focus": float("nan")}, "focus=nan is not allowed; expected a finite number"),
        ({"gain": "high"}, "gain='high' is not allowed; expected a number, or null"),
        ({"exposure": True}, "exposure=True is not allowed; expected a number"),
    ],
)
def test_values_out_of_range_name_the_camera_and_field(fields: dict[str, object], message: str) -> None:
    with pytest.raises(CameraConfigError) as raised:
        OpenCVCameraConfig(name="overhead", device="0", **fields)  # type: ignore[arg-type]
    assert message in str(raised.value)
    assert str(raised.value).startswith("camera 'overhead': ")


def test_in_range_values_and_null_are_accepted() -> None:
    fine = OpenCVCameraConfig(name="overhead", device="0", exposure=333, gain=0, focus=0)
    assert (fine.exposure, fine.gain, fine.focus) == (333, 0, 0)
    assert OpenCVCameraConfig(name="overhead", device="0", fps=15.0, exposure=666).exposure == 666
    entry = {"kind": "opencv", "name": "overhead", "device": "0", "exposure": None, "gain": 5}
    parsed = camera_config_from_dict(entry)
    assert (parsed.exposure, parsed.gain, parsed.focus) == (None, 5, None)


@dataclass(frozen=True)
class _Rig:
    rig: RigConfig = field(default_factory=RigConfig)


def test_a_rig_file_carries_the_settings_and_refuses_a_bad_one_naming_it(tmp_path: Path) -> None:
    rig_file = tmp_path / "rig.yaml"
    rig_file.write_text(TEMPLATE_RIG_FILE.read_text())
    camera = {"kind": "opencv", "name": "overhead", "device": "/dev/video0", "exposure": 156, "gain": 32, "focus": 0}
    write_rig_section(rig_file, "cameras", [camera])
    (overhead,) = parse_command(_Rig, [f"--config_path={rig_file}"]).rig.cameras
    assert (overhead.exposure, overhead.gain, overhead.focus) == (156, 32, 0)
    rig_file.write_text(rig_file.read_text().replace("exposure: 156", "exposure: 500"))
    with pytest.raises(UsageError, match=r"camera 'overhead': exposure=500(\.0)? is not allowed"):
        parse_command(_Rig, [f"--config_path={rig_file}"])
