"""The contact sheet: a numbered, labelled tile per camera with the camera's own picture.

Virtual cameras are real (rendered by the product's virtual camera); a USB camera is a fake below
OpenCV's VideoCapture seam (tests/setup/fake_camera.py), opened by the product's own OpenCV source.
"""

from dataclasses import dataclass, field, replace
from pathlib import Path

import cv2
import numpy as np
import pytest

from robot.cli import parse_command
from robot.config import RigConfig
from robot.setup.camera_modes import CameraMode
from robot.setup.cameras import discover_cameras, rig_virtual_cameras
from robot.setup.contact_sheet import (
    TILE_HEIGHT,
    TILE_WIDTH,
    ContactSheetError,
    compose_contact_sheet,
    take_snapshots,
    tile_area,
    tile_lines,
    write_contact_sheet,
)
from tests.setup.fake_camera import ModeCamera, ModeCapture
from tests.setup.fake_system import FakeSystem
from tests.support.rig_files import rig_yaml

MARGIN = 8  # the sheet's spacing, pixels


@dataclass(frozen=True)
class _Rig:
    rig: RigConfig = field(default_factory=RigConfig)


def virtual_rig(tmp_path: Path) -> RigConfig:
    return parse_command(_Rig, [f"--config_path={rig_yaml(tmp_path, width=160, height=120)}"]).rig


def tile_origin(i: int, columns: int, band: int) -> tuple[int, int]:
    """The top left corner (x, y) of tile `i`; `band`: the label's height below each tile."""
    return MARGIN + (i % columns) * (TILE_WIDTH + MARGIN), MARGIN + (i // columns) * (TILE_HEIGHT + band + MARGIN)


def test_virtual_cameras_are_snapshotted_by_rendering_them(tmp_path: Path) -> None:
    cameras = rig_virtual_cameras(virtual_rig(tmp_path))
    snapshots = take_snapshots(cameras)
    assert [(s.camera.number, s.camera.virtual.name if s.camera.virtual else None) for s in snapshots] == [
        (0, "left_wrist"),
        (1, "right_wrist"),
        (2, "overhead"),
    ]
    images = [s.image for s in snapshots]
    assert all(image is not None and image.shape == (120, 160, 3) for image in images)
    assert not np.array_equal(images[0], images[2])  # a wrist view is not the overhead view
    assert all(image.std() > 5 for image in images if image is not None)  # a scene, not a blank frame


def test_each_tile_holds_its_cameras_picture_and_the_file_is_that_sheet(tmp_path: Path) -> None:
    snapshots = take_snapshots(rig_virtual_cameras(virtual_rig(tmp_path)))
    sheet = compose_contact_sheet(snapshots)
    band = sheet.shape[0] - TILE_HEIGHT - 2 * MARGIN  # one row of three tiles, each with its label below
    assert band == MARGIN + 18 * len(tile_lines(snapshots[0].camera))  # a virtual camera's label: two lines
    assert sheet.shape[1:] == (MARGIN + 3 * (TILE_WIDTH + MARGIN), 3)
    for i, snapshot in enumerate(snapshots):
        x, y = tile_origin(i, 3, band)
        rows, columns = tile_area(snapshot)
        drawn = sheet[y + rows.start : y + rows.stop, x + columns.start : x + columns.stop]
        size = (columns.stop - columns.start, rows.stop - rows.start)
        expected = cv2.resize(snapshot.image, size, interpolation=cv2.INTER_AREA)
        # The picture, except the number's box in the corner.
        assert np.array_equal(drawn[80:], expected[80:])
        assert (sheet[y + 2, x + 2] == 0).all()  # the number's black box
        label = sheet[y + TILE_HEIGHT : y + TILE_HEIGHT + band, x : x + TILE_WIDTH]
        assert label.max() > 200  # its label is written under it
    path = tmp_path / "sheets" / "cameras.png"
    write_contact_sheet(path, snapshots)
    assert np.array_equal(cv2.cvtColor(cv2.imread(str(path)), cv2.COLOR_BGR2RGB), sheet)


def test_a_usb_camera_is_opened_in_the_rigs_mode_and_a_dead_one_gets_a_no_picture_tile(tmp_path: Path) -> None:
    fake = FakeSystem(tmp_path)
    fake.camera(0, fake.usb_device("1-1", "046d", "0825", serial="S1"), "C270", by_id="usb-046d_C270_S1")
    fake.camera(2, fake.usb_device("1-2", "046d", "0826", serial="S2"), "C525", by_id="usb-046d_C525_S2")
    working = ModeCamera({CameraMode("MJPG", 640, 480, 30.0), CameraMode("MJPG", 1280, 720, 30.0)}, (250, 0, 0))
    dead = ModeCamera({CameraMode("MJPG", 640, 480, 30.0)}, plugged=False)

    def open_capture(device: object, backend: int) -> ModeCapture:
        return (working if str(device).endswith("video0") else dead).open(device, backend)

    cameras = [replace(c, modes=tuple(working.modes)) for c in discover_cameras(tmp_path)]
    first, second = take_snapshots(cameras, tmp_path, open_capture)
    assert working.opened == [str(tmp_path / "dev/video0")]  # the node inside the root
    assert first.image is not None
    assert first.image.shape == (480, 640, 3)
    assert tuple(first.image[0, 0]) == (250, 0, 0)  # RGB, converted from OpenCV's BGR
    assert second.image is None
    assert "could not open" in second.problem
    sheet = compose_contact_sheet([first, second])
    x = MARGIN + TILE_WIDTH + MARGIN
    assert tuple(sheet[MARGIN + TILE_HEIGHT - 5, x + TILE_WIDTH - 5]) == (90, 20, 20)  # the no-picture tile
    assert tuple(sheet[MARGIN + TILE_HEIGHT - 5, MARGIN + TILE_WIDTH // 2]) == (250, 0, 0)


def test_a_label_names_the_device_its_stable_names_and_its_modes(tmp_path: Path) -> None:
    fake = FakeSystem(tmp_path)
    twin_a, twin_b = (fake.usb_device(f"1-{n}", "046d", "0825", product="C270") for n in (1, 2))
    fake.camera(0, twin_a, "C270", by_id="usb-046d_C270")
    fake.camera(2, twin_b, "C270", by_id="usb-046d_C270")
    first, _ = discover_cameras(tmp_path)
    first = replace(first, modes=(CameraMode("MJPG", 640, 480, 30.0), CameraMode("MJPG", 640, 480, 60.0)))
    assert tile_lines(first) == [
        "/dev/video0  C270",
        "by-path: /dev/v4l/by-path/pci-0000:00:14.0-usb-0:1:1.0-video-index0",
        "by-id: none  (shared with camera 1)",
        "modes: MJPG 640x480@30/60",
        "rig file: /dev/v4l/by-path/pci-0000:00:14.0-usb-0:1:1.0-video-index0",
    ]


def test_no_snapshots_or_an_unwritable_place_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(ContactSheetError, match="no cameras"):
        compose_contact_sheet([])
    snapshots = take_snapshots(rig_virtual_cameras(virtual_rig(tmp_path))[:1])
    (tmp_path / "file").write_text("")
    with pytest.raises(ContactSheetError, match=r"cannot write the contact sheet .*Next: give another file"):
        write_contact_sheet(tmp_path / "file" / "sheet.png", snapshots)
