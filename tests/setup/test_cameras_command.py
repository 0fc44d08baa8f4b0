"""so101-cameras end to end, through its real main: discovery, the contact sheet, roles, the rig file written.

The virtual rig's cameras are real; a real rig's cameras are a fake /sys and /dev tree given with
--system_root (OpenCV then opens nothing: the tiles say so, and the modes are not known).
"""

from dataclasses import dataclass, field
from pathlib import Path

import cv2
import pytest
import yaml

from robot.cli import parse_command
from robot.commands.cameras import main
from robot.config import RigConfig
from robot.setup.rig_file import TEMPLATE_RIG_FILE
from tests.setup.fake_system import FakeSystem
from tests.support.rig_files import rig_yaml


@dataclass(frozen=True)
class _Rig:
    rig: RigConfig = field(default_factory=RigConfig)


def load(path: Path) -> RigConfig:
    return parse_command(_Rig, [f"--config_path={path}"]).rig


def one_line(text: str) -> str:
    return " ".join(text.split())


def long_folder(tmp_path: Path) -> Path:
    """A folder whose path is wider than a terminal: a printed path must stay one piece (it is pasted)."""
    folder = tmp_path / "a_rig_folder_with_a_name_long_enough_to_pass_the_terminals_eighty_columns"
    folder.mkdir()
    return folder


def test_the_virtual_rig_is_listed_snapshotted_and_its_roles_written(tmp_path: Path, capsys) -> None:
    rig_file = rig_yaml(long_folder(tmp_path))
    before = yaml.safe_load(rig_file.read_text())
    sheet = tmp_path / "sheet.png"
    args = [f"--config_path={rig_file}", f"--contact_sheet={sheet}", "--roles=left_wrist=2,right_wrist=1,overhead=0"]
    assert main([*args, "--write=true"]) == 0
    out = one_line(capsys.readouterr().out)
    assert f"contact sheet: {sheet}" in out
    assert f"wrote `cameras:` into {rig_file}" in out
    assert cv2.imread(str(sheet)).shape[:2] == (8 + 360 + 8 + 36 + 8, 8 + 3 * (480 + 8))  # one row of three tiles
    after = yaml.safe_load(rig_file.read_text())
    assert {k: v for k, v in after.items() if k != "cameras"} == {k: v for k, v in before.items() if k != "cameras"}
    rig = load(rig_file)
    assert [(c.name, c.view) for c in rig.cameras] == [
        ("left_wrist", "overhead"),
        ("right_wrist", "right_wrist"),
        ("overhead", "left_wrist"),
    ]
    assert rig.cameras[0].capture.max_frame_age_s == 1.0  # the rest of each camera's entry is kept


def test_without_roles_or_a_terminal_it_only_lists(tmp_path: Path, capsys) -> None:
    rig_file = rig_yaml(tmp_path)
    before = rig_file.read_bytes()
    assert main([f"--config_path={rig_file}", f"--contact_sheet={tmp_path / 'sheet.png'}"]) == 0
    out = one_line(capsys.readouterr().out)
    assert "virtual:overhead" in out
    assert "say which camera is which: --roles=left_wrist=N,right_wrist=N,overhead=N" in out
    assert rig_file.read_bytes() == before
    assert (tmp_path / "sheet.png").is_file()


def test_roles_without_write_print_the_section_and_change_nothing(tmp_path: Path, capsys) -> None:
    rig_file = rig_yaml(long_folder(tmp_path))
    before = rig_file.read_bytes()
    roles = "--roles=overhead=2"
    assert main([f"--config_path={rig_file}", f"--contact_sheet={tmp_path / 's.png'}", roles]) == 0
    out = capsys.readouterr().out
    assert "cameras:\n  - {kind: virtual, name: overhead, view: overhead," in out
    assert "no camera for left_wrist, right_wrist" in one_line(out)
    assert f"add --write=true (with --config_path) to write this into {rig_file}" in one_line(out)
    assert rig_file.read_bytes() == before


@pytest.fixture
def real_rig(tmp_path: Path) -> tuple[Path, Path]:
    """A rig file from the template, and a fake system with two identical webcams and a C920."""
    rig_file = tmp_path / "my_rig.yaml"
    rig_file.write_text(TEMPLATE_RIG_FILE.read_text())
    fake = FakeSystem(tmp_path / "root")
    for kernel in ("1-1.2", "1-1.3"):
        usb = fake.usb_device(kernel, "046d", "0825", manufacturer="Logitech", product="C270 HD WEBCAM")
        fake.camera(0 if kernel == "1-1.2" else 2, usb, "C270 HD WEBCAM", by_id="usb-046d_C270_HD_WEBCAM")
    c920 = fake.usb_device("1-1.4", "046d", "082d", serial="A1B2C3D4", product="C920")
    fake.camera(4, c920, "HD Pro Webcam C920", by_id="usb-046d_HD_Pro_Webcam_C920_A1B2C3D4")
    return rig_file, fake.root


def test_a_real_rig_gets_by_path_for_twins_and_by_id_for_the_rest(real_rig: tuple[Path, Path], capsys) -> None:
    rig_file, root = real_rig
    template = rig_file.read_text()
    args = [
        f"--config_path={rig_file}",
        f"--system_root={root}",
        f"--contact_sheet={root.parent / 'sheet.png'}",
        "--roles=left_wrist=0,right_wrist=1,overhead=2",
        "--write=true",
    ]
    assert main(args) == 0
    out = one_line(capsys.readouterr().out)
    assert "camera 0: shares its by-id name with camera 1 (no serial number): use by-path" in out
    rig = load(rig_file)
    assert [(c.name, c.device, c.width, c.height, c.fps, c.fourcc) for c in rig.cameras] == [
        ("left_wrist", "/dev/v4l/by-path/pci-0000:00:14.0-usb-0:1.2:1.0-video-index0", 640, 480, 30.0, "MJPG"),
        ("right_wrist", "/dev/v4l/by-path/pci-0000:00:14.0-usb-0:1.3:1.0-video-index0", 640, 480, 30.0, "MJPG"),
        ("overhead", "/dev/v4l/by-id/usb-046d_HD_Pro_Webcam_C920_A1B2C3D4-video-index0", 640, 480, 30.0, "MJPG"),
    ]
    kept = [line for line in template.splitlines() if not line.startswith("  - {kind: opencv")]
    assert [line for line in rig_file.read_text().splitlines() if not line.startswith("  - {kind: opencv")] == kept
    assert (root.parent / "sheet.png").is_file()  # the tiles say "no picture": nothing answers the fake nodes


def test_write_needs_a_rig_file_and_roles(tmp_path: Path, capsys) -> None:
    sheet = f"--contact_sheet={tmp_path / 's.png'}"
    assert main(["--roles=overhead=0", "--write=true", sheet]) == 2
    err = one_line(capsys.readouterr().err)
    assert "error: --write=true needs the rig file to write. Next: so101-cameras --config_path=my_rig.yaml" in err
    assert main([f"--config_path={rig_yaml(tmp_path)}", "--write=true", sheet]) == 2
    assert "--write=true needs --roles" in capsys.readouterr().err


def test_bad_roles_are_a_usage_error_and_change_nothing(tmp_path: Path, capsys) -> None:
    rig_file = rig_yaml(tmp_path)
    before = rig_file.read_bytes()
    args = [f"--config_path={rig_file}", f"--contact_sheet={tmp_path / 's.png'}", "--write=true"]
    assert main([*args, "--roles=overhead=5"]) == 2
    assert "'overhead=5' names no camera; the cameras are numbered 0, 1, 2" in one_line(capsys.readouterr().err)
    assert rig_file.read_bytes() == before


def test_no_cameras_plugged_in_is_one_line_and_exit_1(real_rig: tuple[Path, Path], tmp_path: Path, capsys) -> None:
    rig_file, _ = real_rig
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main([f"--config_path={rig_file}", f"--system_root={empty}", f"--contact_sheet={tmp_path / 's.png'}"]) == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) <= 2  # one message, wrapped at most once
    assert one_line(" ".join(lines)).startswith("error: no cameras found")
    assert not (tmp_path / "s.png").exists()
