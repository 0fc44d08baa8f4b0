"""Writing one section of a rig file: the rest of the file, comments included, stays as the person left it.

Real files throughout: the repository's template and virtual rig, copied to a temporary folder, and
each result loaded the way every command loads a rig (parse_command).
"""

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from robot.cli import parse_command
from robot.config import HARDWARE_CONFIGS, MismatchPolicy, PortsConfig, RigConfig
from robot.setup.rig_file import (
    TEMPLATE_RIG_FILE,
    RigFileError,
    ensure_rig_file,
    replaced_section,
    section_text,
    write_rig_section,
)

CAMERAS = [
    {
        "kind": "opencv",
        "name": "left_wrist",
        "device": "/dev/v4l/by-path/pci-0000:00:14.0-usb-0:1.2:1.0-video-index0",
        "width": 640,
        "height": 480,
        "fps": 30,
        "fourcc": "MJPG",
    },
    {
        "kind": "opencv",
        "name": "overhead",
        "device": "/dev/v4l/by-id/usb-046d_C920_ABCD-video-index0",
        "width": 1280,
        "height": 720,
        "fps": 30,
        "fourcc": "MJPG",
        "exposure": 150,
    },
]


@dataclass(frozen=True)
class _Rig:
    rig: RigConfig = field(default_factory=RigConfig)


def load(path: Path) -> RigConfig:
    return parse_command(_Rig, [f"--config_path={path}"]).rig


@pytest.fixture
def rig_file(tmp_path: Path) -> Path:
    path = tmp_path / "my_rig.yaml"
    path.write_text(TEMPLATE_RIG_FILE.read_text())
    return path


def lines_outside(text: str, key: str) -> list[str]:
    """The file's lines without the `key:` section (its line and the indented ones under it, comments too)."""
    out, inside = [], False
    for line in text.splitlines():
        if line.startswith(f"{key}:"):
            inside = True
            continue
        if inside and line.startswith((" ", "-")):
            continue
        inside = False
        out.append(line)
    return out


def test_cameras_are_replaced_one_flow_mapping_a_line_and_every_other_line_stays(rig_file: Path) -> None:
    before = rig_file.read_text()
    write_rig_section(rig_file, "cameras", CAMERAS)
    after = rig_file.read_text()
    assert lines_outside(after, "cameras") == lines_outside(before, "cameras")
    assert "# Cameras: use the stable /dev/v4l/by-id/... paths" in after  # the comment above the section
    assert (
        "cameras:\n"
        "  - {kind: opencv, name: left_wrist, device: "
        "'/dev/v4l/by-path/pci-0000:00:14.0-usb-0:1.2:1.0-video-index0', width: 640, height: 480, fps: 30,"
        " fourcc: MJPG}\n"
        "  - {kind: opencv, name: overhead, device: /dev/v4l/by-id/usb-046d_C920_ABCD-video-index0, width: 1280,"
        " height: 720, fps: 30, fourcc: MJPG, exposure: 150}\n"
    ) in after
    rig = load(rig_file)
    assert [(c.name, c.device, c.width) for c in rig.cameras] == [(e["name"], e["device"], e["width"]) for e in CAMERAS]
    assert rig.cameras[1].exposure == 150


def test_ports_from_a_dataclass_replace_the_template_ports(rig_file: Path) -> None:
    before = rig_file.read_text()
    ports = PortsConfig("/dev/so101_left_follower", "/dev/so101_right_follower", "/dev/so101_left_leader", "")
    write_rig_section(rig_file, "ports", ports)
    after = rig_file.read_text()
    assert lines_outside(after, "ports") == lines_outside(before, "ports")
    assert "ports:\n  left_follower: /dev/so101_left_follower\n" in after
    assert "right_leader: ''" in after
    assert load(rig_file).ports.by_arm() == {
        "left_follower": "/dev/so101_left_follower",
        "right_follower": "/dev/so101_right_follower",
        "left_leader": "/dev/so101_left_leader",
    }


def test_a_scalar_keeps_the_comment_beside_it_and_enums_are_written_as_values(rig_file: Path) -> None:
    write_rig_section(rig_file, "fps", 15)
    write_rig_section(rig_file, "calibration", {"dir": None, "on_mismatch": MismatchPolicy.FAIL})
    text = rig_file.read_text()
    assert "fps: 15                    # the control rate, Hz;" in text
    assert "  dir: null                # null: LeRobot's default location" in text
    assert "on_mismatch: fail" in text
    rig = load(rig_file)
    assert (rig.fps, rig.calibration.on_mismatch) == (15, MismatchPolicy.FAIL)


def test_a_section_the_file_lacks_is_appended(rig_file: Path) -> None:
    before = rig_file.read_text()
    assert "\nrealtime_priority:" not in before
    write_rig_section(rig_file, "realtime_priority", 20)
    assert rig_file.read_text() == before + "realtime_priority: 20\n"
    assert load(rig_file).realtime_priority == 20


def test_a_value_the_rig_refuses_leaves_the_file_as_it_was_and_says_why(rig_file: Path) -> None:
    before = rig_file.read_bytes()
    slow = [{**CAMERAS[0], "fps": 25}]  # a 25 fps camera cannot feed the 30 Hz loop
    with pytest.raises(RigFileError) as raised:
        write_rig_section(rig_file, "cameras", slow)
    message = str(raised.value)
    assert message.startswith(f"not written: {rig_file} with `cameras:` would not load as a rig:")
    assert "25 fps cannot feed a 30 Hz control loop" in message
    assert ". Next: " in message
    assert "\n" not in message
    assert ".tmp" not in message  # it names the person's file, not the temporary one
    assert rig_file.read_bytes() == before
    assert sorted(p.name for p in rig_file.parent.iterdir()) == ["my_rig.yaml"]  # no temporary file left


def test_a_value_of_the_wrong_type_is_refused_through_the_real_parser(rig_file: Path) -> None:
    before = rig_file.read_bytes()
    with pytest.raises(RigFileError, match=r"reply_timeout_ms.*'fast'"):
        write_rig_section(rig_file, "bus", {"reply_timeout_ms": "fast"})
    assert rig_file.read_bytes() == before


def test_the_file_mode_is_kept(rig_file: Path) -> None:
    rig_file.chmod(0o640)
    write_rig_section(rig_file, "fps", 15)
    assert rig_file.stat().st_mode & 0o777 == 0o640


def test_a_key_written_twice_is_refused_rather_than_guessed(rig_file: Path) -> None:
    text = rig_file.read_text()
    rig_file.write_text(text + "fps: 60\n")
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("fps:")) + 1
    second = len(lines) + 1  # the line appended
    before = rig_file.read_bytes()
    with pytest.raises(RigFileError, match=rf"has `fps:` on lines {first}, {second}\. Next: delete all but one"):
        write_rig_section(rig_file, "fps", 15)
    assert rig_file.read_bytes() == before


def test_a_list_at_column_0_and_comments_inside_the_section_are_replaced_whole() -> None:
    text = "id: x\ncameras:\n# the old ones\n- {kind: virtual, name: a}\n  # indented note\n- {kind: virtual, name: b}\n\n# sync\nsync: {}\n"  # noqa: E501
    new = replaced_section(text, "cameras", section_text("cameras", [{"kind": "virtual", "name": "c"}]))
    assert new == "id: x\ncameras:\n  - {kind: virtual, name: c}\n\n# sync\nsync: {}\n"


def test_the_virtual_rig_keeps_its_long_comments(tmp_path: Path) -> None:
    path = tmp_path / "virtual.yaml"
    original = (HARDWARE_CONFIGS / "virtual.yaml").read_text()
    path.write_text(original)
    write_rig_section(path, "bus", {"reply_timeout_ms": 30.0, "read_deadline_ms": 60.0, "status_poll_period_s": 0.5})
    after = path.read_text()
    # Its comment lines inside the section stay above the key they were written for.
    slack = [line for line in original.splitlines() if line.startswith("  # ")][:2]
    assert slack[0].startswith("  # More slack than real arms")
    section = "\n".join(["bus:", *slack, "  reply_timeout_ms: 30.0", "  read_deadline_ms: 60.0"])
    assert f"{section}\n  status_poll_period_s: 0.5\nvirtual:" in after
    assert lines_outside(after, "bus") == lines_outside(original, "bus")
    assert load(path).bus.reply_timeout_ms == 30.0


def test_a_missing_file_is_a_typed_error_with_the_template_as_next_step(tmp_path: Path) -> None:
    with pytest.raises(RigFileError, match=r"does not exist\. Next: cp .*so101_bimanual.yaml"):
        write_rig_section(tmp_path / "nope.yaml", "fps", 30)


def test_a_value_yaml_cannot_hold_is_refused(rig_file: Path) -> None:
    with pytest.raises(RigFileError, match="cannot write"):
        write_rig_section(rig_file, "fps", {1, 2})


def test_ensure_rig_file_copies_the_template_once(tmp_path: Path) -> None:
    path = tmp_path / "rigs" / "my_rig.yaml"
    assert ensure_rig_file(path) is True
    assert path.read_text() == TEMPLATE_RIG_FILE.read_text()
    assert path.stat().st_mode & 0o777 == 0o666 & ~_umask()
    path.write_text(path.read_text().replace("fps: 30 ", "fps: 15 "))
    assert ensure_rig_file(path) is False
    assert "fps: 15 " in path.read_text()  # an existing file is never replaced


def test_ensure_rig_file_names_the_rig(tmp_path: Path) -> None:
    path = tmp_path / "my_rig.yaml"
    ensure_rig_file(path, rig_id="kitchen_rig")
    text = path.read_text()
    assert "id: kitchen_rig            # calibration files: <id>_left.json" in text
    assert load(path).id == "kitchen_rig"
    assert yaml.safe_load(text)["ports"] == yaml.safe_load(TEMPLATE_RIG_FILE.read_text())["ports"]


def test_ensure_rig_file_refuses_a_bad_id_and_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "my_rig.yaml"
    with pytest.raises(RigFileError, match="id='bad id!'"):
        ensure_rig_file(path, rig_id="bad id!")
    assert not path.exists()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
