"""Finding the cameras: capture nodes, their by-id and by-path names, names two cameras share, their modes, roles.

Hardware is a fake /sys and /dev tree (tests/setup/fake_system.py), the seam discovery reads through;
modes come from captured `v4l2-ctl` text, or from a camera behind OpenCV's VideoCapture seam.
"""

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from robot.cameras.config import OpenCVCameraConfig
from robot.cli import UsageError
from robot.config import PortsConfig, RigConfig
from robot.setup.camera_modes import (
    CameraMode,
    camera_modes,
    choose_mode,
    modes_summary,
    parse_v4l2_formats,
    probe_modes,
    v4l2_modes,
)
from robot.setup.camera_roles import parse_roles, prompt_roles, rig_camera_entries
from robot.setup.cameras import discover_cameras
from tests.setup.fake_camera import ModeCamera
from tests.setup.fake_system import FakeSystem

# `v4l2-ctl -d /dev/video0 --list-formats-ext` of a Logitech C920 (v4l-utils 1.22), shortened.
C920_FORMATS = """\
ioctl: VIDIOC_ENUM_FMT
\tType: Video Capture

\t[0]: 'YUYV' (YUYV 4:2:2)
\t\tSize: Discrete 640x480
\t\t\tInterval: Discrete 0.033s (30.000 fps)
\t\t\tInterval: Discrete 0.042s (24.000 fps)
\t\tSize: Discrete 1280x720
\t\t\tInterval: Discrete 0.100s (10.000 fps)
\t[1]: 'H264' (H.264, compressed)
\t\tSize: Discrete 640x480
\t\t\tInterval: Discrete 0.033s (30.000 fps)
\t[2]: 'MJPG' (Motion-JPEG, compressed)
\t\tSize: Discrete 640x480
\t\t\tInterval: Discrete 0.033s (30.000 fps)
\t\t\tInterval: Discrete 0.017s (60.000 fps)
\t\tSize: Discrete 1920x1080
\t\t\tInterval: Discrete 0.033s (30.000 fps)
"""
# The layout of older v4l-utils (1.14, Ubuntu 18.04), and a stepwise size, which is not listed.
OLD_FORMATS = """\
ioctl: VIDIOC_ENUM_FMT
\tIndex       : 0
\tType        : Video Capture
\tPixel Format: 'MJPG' (compressed)
\tName        : Motion-JPEG
\t\tSize: Discrete 1280x720
\t\t\tInterval: Discrete 0.033s (30.000 fps)
\t\tSize: Stepwise 32x32 - 1920x1080 with step 2/2
\t\t\tInterval: Stepwise 0.033s - 1.000s with step 0.000s (1.000-30.000 fps)

\tIndex       : 1
\tType        : Video Capture
\tPixel Format: 'YUYV'
\tName        : YUYV 4:2:2
\t\tSize: Discrete 320x240
\t\t\tInterval: Discrete 0.033s (29.970 fps)
"""


@pytest.fixture
def system(tmp_path: Path) -> FakeSystem:
    """Two identical webcams without serial numbers (one by-id name between them) and one with a serial."""
    fake = FakeSystem(tmp_path / "root")
    twin_a = fake.usb_device("1-1.2", "046d", "0825", manufacturer="Logitech", product="C270 HD WEBCAM")
    twin_b = fake.usb_device("1-1.3", "046d", "0825", manufacturer="Logitech", product="C270 HD WEBCAM")
    own = fake.usb_device("1-1.4", "046d", "082d", serial="A1B2C3D4", manufacturer="Logitech", product="C920")
    fake.camera(0, twin_a, "C270 HD WEBCAM", by_id="usb-046d_C270_HD_WEBCAM")
    fake.camera(2, twin_b, "C270 HD WEBCAM", by_id="usb-046d_C270_HD_WEBCAM")  # udev: the last one wins the name
    fake.camera(4, own, "HD Pro Webcam C920", by_id="usb-046d_HD_Pro_Webcam_C920_A1B2C3D4")
    return fake


def test_only_capture_nodes_are_listed_numbered_in_node_order(system: FakeSystem) -> None:
    cameras = discover_cameras(system.root)
    assert [(c.number, c.device, c.card) for c in cameras] == [
        (0, "/dev/video0", "C270 HD WEBCAM"),
        (1, "/dev/video2", "C270 HD WEBCAM"),
        (2, "/dev/video4", "HD Pro Webcam C920"),
    ]  # video1, video3, video5 are the metadata nodes (index 1)
    assert [c.usb.serial if c.usb else "?" for c in cameras] == [None, None, "A1B2C3D4"]


def test_each_camera_gets_the_links_that_point_at_it(system: FakeSystem) -> None:
    first, second, third = discover_cameras(system.root)
    assert first.by_path == ("/dev/v4l/by-path/pci-0000:00:14.0-usb-0:1.2:1.0-video-index0",)
    assert second.by_path == ("/dev/v4l/by-path/pci-0000:00:14.0-usb-0:1.3:1.0-video-index0",)
    assert first.by_id == ()  # the shared name went to the camera plugged in last
    assert second.by_id == ("/dev/v4l/by-id/usb-046d_C270_HD_WEBCAM-video-index0",)
    assert third.by_id == ("/dev/v4l/by-id/usb-046d_HD_Pro_Webcam_C920_A1B2C3D4-video-index0",)


def test_identical_cameras_are_flagged_and_get_their_by_path_name(system: FakeSystem) -> None:
    first, second, third = discover_cameras(system.root)
    assert (first.shares_by_id_with, second.shares_by_id_with, third.shares_by_id_with) == ((1,), (0,), ())
    assert first.stable_device == first.by_path[0]
    assert second.stable_device == second.by_path[0]  # it has the by-id link, but the link can move
    assert third.stable_device == third.by_id[0]
    assert "shares its by-id name with camera 0 (no serial number): use by-path" in second.naming_note
    assert third.naming_note == ""


def test_two_nodes_of_one_device_are_not_twins(tmp_path: Path) -> None:
    fake = FakeSystem(tmp_path)
    usb = fake.usb_device("1-2", "8086", "0b07", product="RealSense")
    fake.camera(0, usb, "RGB", by_id="usb-Intel_RealSense", metadata=False)
    (tmp_path / "sys/class/video4linux").mkdir(exist_ok=True)
    interface = usb / f"{usb.name}:1.0"
    folder = interface / "video4linux" / "video2"  # a second capture node (index 0 of another interface's node)
    folder.mkdir(parents=True)
    (folder / "name").write_text("Depth\n")
    (folder / "index").write_text("0\n")
    (folder / "device").symlink_to("../..")
    (tmp_path / "sys/class/video4linux/video2").symlink_to(f"../../../{folder.relative_to(tmp_path)}")
    (tmp_path / "dev/video2").touch()
    cameras = discover_cameras(tmp_path)
    assert [c.device for c in cameras] == ["/dev/video0", "/dev/video2"]
    assert [c.shares_by_id_with for c in cameras] == [(), ()]


def test_no_video4linux_folder_means_no_cameras(tmp_path: Path) -> None:
    assert discover_cameras(tmp_path) == []


def test_a_camera_without_links_keeps_its_node_with_a_note(tmp_path: Path) -> None:
    fake = FakeSystem(tmp_path)
    fake.camera(0, fake.usb_device("1-1", "1234", "5678", serial="S1"), "Cam")
    for link in (tmp_path / "dev/v4l/by-path").iterdir():
        link.unlink()
    (camera,) = discover_cameras(tmp_path)
    assert camera.stable_device == "/dev/video0"
    assert "no by-id name and no by-path name: /dev/video0 may change" in camera.naming_note


def test_v4l2_ctl_output_is_parsed_in_both_layouts() -> None:
    assert parse_v4l2_formats(C920_FORMATS) == (
        CameraMode("YUYV", 640, 480, 30.0),
        CameraMode("YUYV", 640, 480, 24.0),
        CameraMode("YUYV", 1280, 720, 10.0),
        CameraMode("H264", 640, 480, 30.0),
        CameraMode("MJPG", 640, 480, 30.0),
        CameraMode("MJPG", 640, 480, 60.0),
        CameraMode("MJPG", 1920, 1080, 30.0),
    )
    assert parse_v4l2_formats(OLD_FORMATS) == (CameraMode("MJPG", 1280, 720, 30.0), CameraMode("YUYV", 320, 240, 29.97))
    assert parse_v4l2_formats("") == ()


def test_v4l2_ctl_is_run_on_the_device_and_a_failure_means_unknown() -> None:
    calls = []

    def run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        calls.append(command)
        failed = command[2] == "/dev/video9"
        return subprocess.CompletedProcess(command, 1 if failed else 0, "" if failed else C920_FORMATS, "")

    assert len(v4l2_modes("/dev/video0", run) or ()) == 7
    assert calls == [["v4l2-ctl", "-d", "/dev/video0", "--list-formats-ext"]]
    assert v4l2_modes("/dev/video9", run) is None
    # Without v4l2-ctl's answer, OpenCV is asked instead.
    camera = ModeCamera({CameraMode("MJPG", 640, 480, 30.0)})
    assert camera_modes("/dev/video9", run, camera.open) == (CameraMode("MJPG", 640, 480, 30.0),)


def test_opencv_probing_keeps_the_modes_the_driver_keeps() -> None:
    offered = {
        CameraMode("MJPG", 640, 480, 30.0),
        CameraMode("MJPG", 640, 480, 60.0),
        CameraMode("YUYV", 640, 480, 30.0),
        CameraMode("MJPG", 1280, 720, 30.0),
    }
    camera = ModeCamera(offered)
    assert set(probe_modes("/dev/video0", camera.open)) == offered
    assert camera.opened == ["/dev/video0"]
    assert camera.releases == 1
    assert probe_modes("2", camera.open)
    assert camera.opened[-1] == 2  # an index, as OpenCV wants it
    unplugged = ModeCamera(offered, plugged=False)
    assert probe_modes("/dev/video0", unplugged.open) == ()
    assert unplugged.releases == 1


def test_modes_read_as_one_line_and_the_nearest_is_chosen() -> None:
    modes = parse_v4l2_formats(C920_FORMATS)
    assert modes_summary(modes) == "YUYV 640x480@24/30, 1280x720@10; H264 640x480@30; MJPG 640x480@30/60, 1920x1080@30"
    assert modes_summary(()) == "modes not known"
    wanted = CameraMode("MJPG", 640, 480, 30.0)
    assert choose_mode(modes, wanted) == wanted
    assert choose_mode((), wanted) == wanted  # nothing known: as asked, and the camera checks it at connect
    # Not offered: the offered size nearest in pixels at that rate, in the format asked for.
    assert choose_mode(modes, CameraMode("MJPG", 1280, 720, 30.0)) == CameraMode("MJPG", 640, 480, 30.0)
    assert choose_mode(modes, CameraMode("MJPG", 1600, 1200, 30.0)) == CameraMode("MJPG", 1920, 1080, 30.0)
    assert choose_mode(modes, CameraMode("H264", 1280, 720, 24.0)) == CameraMode("YUYV", 640, 480, 24.0)
    assert choose_mode(modes, CameraMode("MJPG", 640, 480, 15.0)) is None


def test_roles_are_parsed_against_the_cameras_found(system: FakeSystem) -> None:
    cameras = discover_cameras(system.root)
    assert parse_roles("overhead=1, left_wrist=2,right_wrist=0", cameras) == {
        "left_wrist": 2,
        "right_wrist": 0,
        "overhead": 1,
    }
    assert parse_roles("overhead=0", cameras) == {"overhead": 0}
    for text, message in [
        ("top=1", "'top' is not a camera role; the roles are left_wrist, right_wrist, overhead"),
        ("overhead=7", "'overhead=7' names no camera; the cameras are numbered 0, 1, 2"),
        ("overhead=x", "'overhead=x' names no camera"),
        ("overhead=1,overhead=2", "overhead is given twice"),
        ("overhead=1,left_wrist=1", "camera 1 is given two roles"),
    ]:
        with pytest.raises(UsageError) as raised:
            parse_roles(text, cameras)
        assert message in str(raised.value)
        assert "Next: --roles=left_wrist=2,right_wrist=0,overhead=1" in str(raised.value)


def test_the_prompt_asks_for_each_role_and_asks_again_after_a_wrong_answer(system: FakeSystem) -> None:
    cameras = discover_cameras(system.root)
    answers = iter(["2", "9", "2", "0", ""])  # left: 2; right: 9 (no such), 2 (taken), 0; overhead: none
    questions, said = [], []

    def ask(question: str) -> str:
        questions.append(question)
        return next(answers)

    assert prompt_roles(cameras, ask, said.append) == {"left_wrist": 2, "right_wrist": 0}
    assert questions == [
        "camera number for left_wrist (Enter: none): ",
        *["camera number for right_wrist (Enter: none): "] * 3,
        "camera number for overhead (Enter: none): ",
    ]
    assert said == [
        "'9' is not a free camera number (cameras: 0, 1, 2; taken: 2)",
        "'2' is not a free camera number (cameras: 0, 1, 2; taken: 2)",
    ]


def test_entries_keep_the_rig_files_settings_for_a_role_with_the_new_device(system: FakeSystem) -> None:
    cameras = [
        c.__class__(**{**c.__dict__, "modes": parse_v4l2_formats(C920_FORMATS)}) for c in discover_cameras(system.root)
    ]
    overhead = OpenCVCameraConfig(
        name="overhead", device="/dev/video9", width=640, height=480, fps=60.0, exposure=120, focus=0
    )
    rig = RigConfig(ports=PortsConfig("/dev/a", "/dev/b", "", ""), cameras=(overhead,))
    entries, notes = rig_camera_entries({"left_wrist": 0, "overhead": 2}, cameras, rig)
    assert entries == [
        {
            "kind": "opencv",
            "name": "left_wrist",
            "device": cameras[0].by_path[0],
            "width": 640,
            "height": 480,
            "fps": 30,
            "fourcc": "MJPG",
        },
        {
            "kind": "opencv",
            "name": "overhead",
            "device": cameras[2].by_id[0],
            "width": 640,
            "height": 480,
            "fps": 60,
            "fourcc": "MJPG",
            "exposure": 120,
            "focus": 0,
        },
    ]
    assert any("left_wrist: camera 0 shares its by-id name" in note for note in notes)
    assert "no camera for right_wrist: the rig file will have none" in notes


def test_a_mode_the_camera_lacks_is_swapped_for_the_nearest_at_the_rigs_rate(system: FakeSystem) -> None:
    offered = (CameraMode("YUYV", 640, 480, 30.0), CameraMode("MJPG", 800, 600, 30.0), CameraMode("MJPG", 320, 240, 60))
    cameras = [replace(c, modes=offered) for c in discover_cameras(system.root)]
    rig = RigConfig(ports=PortsConfig("/dev/a", "/dev/b", "", ""))
    entries, notes = rig_camera_entries({"overhead": 2}, cameras, rig)
    assert (entries[0]["width"], entries[0]["height"], entries[0]["fourcc"], entries[0]["fps"]) == (
        800,
        600,
        "MJPG",
        30,
    )
    assert "overhead: camera 2 does not offer MJPG 640x480@30; using MJPG 800x600@30" in notes
    slow = [replace(c, modes=(CameraMode("MJPG", 640, 480, 15.0),)) for c in cameras]
    with pytest.raises(UsageError, match=r"camera 2 \(/dev/video4\) offers no mode at 30 fps for overhead"):
        rig_camera_entries({"overhead": 2}, slow, rig)
