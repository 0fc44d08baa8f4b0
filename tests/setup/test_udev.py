"""udev rules from the rig file: each adapter and camera found in a fake sysfs tree and named by serial or socket.

The tree (tests/setup/fake_system.py) is laid out as Linux lays it out: ports are /dev/serial/by-id
links to ttyACM/ttyUSB nodes whose sysfs `device` leads up to the USB device's idVendor, idProduct
and serial files. so101-udev runs through its real main with --system_root.
"""

from pathlib import Path

import pytest
import yaml

from robot.commands.udev import main
from robot.config import HARDWARE_CONFIGS, PortsConfig, RigConfig
from robot.setup.rig_file import TEMPLATE_RIG_FILE
from robot.setup.sysfs import resolve_under
from robot.setup.udev import install_command, rules_text, udev_plan
from tests.setup.fake_system import FakeSystem

BY_ID = {
    "left_follower": "usb-1a86_USB_Single_Serial_5A46083062-if00",
    "right_follower": "usb-1a86_USB_Single_Serial_5A46083063-if00",
    "left_leader": "usb-1a86_USB_Single_Serial_5A46083064-if00",
    "right_leader": "usb-1a86_USB2.0-Serial-if00-port0",  # a CH340 without a serial number
}
INSTALL = "sudo cp {} /etc/udev/rules.d/99-so101.rules && sudo udevadm control --reload-rules && sudo udevadm trigger"


@pytest.fixture
def desk(tmp_path: Path) -> tuple[Path, Path]:
    """(rig file, root): four adapters (one without a serial number) and three cameras (two identical)."""
    fake = FakeSystem(tmp_path / "root")
    for i, arm in enumerate(("left_follower", "right_follower", "left_leader")):
        usb = fake.usb_device(f"1-1.{i + 1}", "1a86", "55d3", serial=f"5A4608306{i + 2}", product="USB Single Serial")
        fake.serial_port(f"ttyACM{i}", usb, by_id=BY_ID[arm])
    ch340 = fake.usb_device("1-1.4", "1a86", "7523", product="USB2.0-Serial")
    fake.serial_port("ttyUSB0", ch340, by_id=BY_ID["right_leader"], usb_serial=True)
    twins = [fake.usb_device(f"2-1.{n}", "046d", "0825", product="C270 HD WEBCAM") for n in (1, 2)]
    fake.camera(0, twins[0], "C270", by_id="usb-046d_C270_HD_WEBCAM")
    fake.camera(2, twins[1], "C270", by_id="usb-046d_C270_HD_WEBCAM")
    fake.camera(4, fake.usb_device("2-1.3", "046d", "082d", serial="A1B2C3D4"), "C920", by_id="usb-046d_C920_A1B2C3D4")
    rig = yaml.safe_load(TEMPLATE_RIG_FILE.read_text())
    rig["ports"] = {arm: f"/dev/serial/by-id/{name}" for arm, name in BY_ID.items()}
    by_path = "/dev/v4l/by-path/pci-0000:00:14.0-usb-0:1.{}:1.0-video-index0"
    rig["cameras"] = [
        {"kind": "opencv", "name": "left_wrist", "device": by_path.format(1)},
        {"kind": "opencv", "name": "right_wrist", "device": by_path.format(2)},
        {"kind": "opencv", "name": "overhead", "device": "/dev/v4l/by-id/usb-046d_C920_A1B2C3D4-video-index0"},
    ]
    rig_file = tmp_path / "my_rig.yaml"
    rig_file.write_text(yaml.safe_dump(rig, sort_keys=False))
    return rig_file, fake.root


def rig_of(rig_file: Path) -> RigConfig:
    from dataclasses import dataclass, field

    from robot.cli import parse_command

    @dataclass(frozen=True)
    class Rig:
        rig: RigConfig = field(default_factory=RigConfig)

    return parse_command(Rig, [f"--config_path={rig_file}"]).rig


def test_each_adapter_is_named_by_its_serial_number(desk: tuple[Path, Path]) -> None:
    plan = udev_plan(rig_of(desk[0]), desk[1])
    rules = dict(plan.ports)
    assert rules["left_follower"].rule == (
        'SUBSYSTEM=="tty", ATTRS{idVendor}=="1a86", ATTRS{idProduct}=="55d3", ATTRS{serial}=="5A46083062", '
        'SYMLINK+="so101_left_follower", MODE="0660", GROUP="dialout"'
    )
    assert [rules[arm].link for arm in ("left_follower", "right_follower", "left_leader")] == [
        "/dev/so101_left_follower",
        "/dev/so101_right_follower",
        "/dev/so101_left_leader",
    ]
    assert 'ATTRS{serial}=="5A46083064"' in rules["left_leader"].rule
    assert plan.missing == ()


def test_an_adapter_without_a_serial_number_is_named_by_its_socket_with_its_by_path_name(desk: tuple[Path, Path]):
    rule = dict(udev_plan(rig_of(desk[0]), desk[1]).ports)["right_leader"]
    assert rule.rule == (
        'SUBSYSTEM=="tty", KERNELS=="1-1.4", ATTRS{idVendor}=="1a86", ATTRS{idProduct}=="7523", '
        'SYMLINK+="so101_right_leader", MODE="0660", GROUP="dialout"'
    )
    assert rule.note == (
        "1a86:7523 has no serial number: named by its USB socket 1-1.4, keep it there; "
        "or use /dev/serial/by-path/pci-0000:00:14.0-usb-0:1.4:1.0-port0"
    )


def test_cameras_by_serial_and_identical_ones_by_id_path(desk: tuple[Path, Path]) -> None:
    rules = dict(udev_plan(rig_of(desk[0]), desk[1], camera_group="plugdev").cameras)
    assert rules["overhead"].rule == (
        'SUBSYSTEM=="video4linux", ATTRS{idVendor}=="046d", ATTRS{idProduct}=="082d", ATTRS{serial}=="A1B2C3D4", '
        'ATTR{index}=="0", SYMLINK+="so101_cam_overhead", MODE="0660", GROUP="plugdev"'
    )
    assert rules["left_wrist"].rule == (
        'SUBSYSTEM=="video4linux", ENV{ID_PATH}=="pci-0000:00:14.0-usb-0:1.1:1.0", ATTR{index}=="0", '
        'SYMLINK+="so101_cam_left_wrist", MODE="0660", GROUP="plugdev"'
    )
    assert 'ENV{ID_PATH}=="pci-0000:00:14.0-usb-0:1.2:1.0"' in rules["right_wrist"].rule
    assert rules["left_wrist"].note.startswith("046d:0825 has no serial number: named by its USB socket 2-1.1")


def test_two_adapters_with_one_serial_number_are_both_named_by_socket(tmp_path: Path) -> None:
    fake = FakeSystem(tmp_path)
    for i in range(2):
        fake.serial_port(f"ttyACM{i}", fake.usb_device(f"1-{i + 1}", "1a86", "55d3", serial="0001"), by_id=f"a{i}")
    rig = RigConfig(ports=PortsConfig("/dev/serial/by-id/a0", "/dev/serial/by-id/a1", "", ""))
    rules = dict(udev_plan(rig, tmp_path).ports)
    assert 'KERNELS=="1-1"' in rules["left_follower"].rule
    assert 'KERNELS=="1-2"' in rules["right_follower"].rule
    assert "its serial number 0001 is not its own" in rules["right_follower"].note


def test_a_link_with_an_absolute_target_is_followed_inside_the_root(tmp_path: Path) -> None:
    fake = FakeSystem(tmp_path)
    fake.serial_port("ttyACM3", fake.usb_device("3-1", "1a86", "55d3", serial="XYZ"))
    link = tmp_path / "dev/serial/by-id/abs"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to("/dev/ttyACM3")  # on the real system: the node; here: root/dev/ttyACM3
    assert resolve_under(tmp_path, "/dev/serial/by-id/abs") == tmp_path / "dev/ttyACM3"
    fake.serial_port("ttyACM4", fake.usb_device("3-2", "1a86", "55d3", serial="XYW"))
    rig = RigConfig(ports=PortsConfig("/dev/serial/by-id/abs", "/dev/ttyACM4", "", ""))
    rules = dict(udev_plan(rig, tmp_path).ports)
    assert 'ATTRS{serial}=="XYZ"' in rules["left_follower"].rule
    assert 'ATTRS{serial}=="XYW"' in rules["right_follower"].rule


def test_two_arms_on_one_adapter_are_refused_by_name(tmp_path: Path) -> None:
    fake = FakeSystem(tmp_path)
    fake.serial_port("ttyACM0", fake.usb_device("1-1", "1a86", "55d3", serial="ABC"), by_id="usb-ABC-if00")
    rig = RigConfig(ports=PortsConfig("/dev/serial/by-id/usb-ABC-if00", "/dev/ttyACM0", "", ""))
    plan = udev_plan(rig, tmp_path)
    assert [arm for arm, _ in plan.ports] == ["left_follower"]
    assert plan.missing[0].startswith("right_follower: /dev/ttyACM0 is the adapter of left_follower too")


def test_the_rules_file_explains_itself_and_the_install_command_is_quoted() -> None:
    assert install_command(Path("my rules/99-so101.rules")) == INSTALL.format("'my rules/99-so101.rules'")


def test_the_command_writes_the_rules_prints_the_install_command_and_the_new_port_values(desk, tmp_path, capsys):
    rig_file, root = desk
    rules_path = tmp_path / "99-so101.rules"
    assert main([f"--config_path={rig_file}", f"--system_root={root}", f"--rules_path={rules_path}"]) == 0
    out = capsys.readouterr().out
    text = rules_path.read_text()
    plan = udev_plan(rig_of(rig_file), root)
    assert text == rules_text(plan, str(rig_file))
    assert text.startswith("# /etc/udev/rules.d/99-so101.rules: fixed names and permissions")
    assert len([line for line in text.splitlines() if line.startswith("SUBSYSTEM==")]) == 7
    assert "# right_leader -> /dev/so101_right_leader (1a86:7523 has no serial number" in text
    assert f"install them (this command does not): {INSTALL.format(rules_path)}" in out
    assert "note: right_leader: 1a86:7523 has no serial number" in out
    for arm in BY_ID:
        assert f"  {arm}: /dev/so101_{arm}\n" in out
    assert "  overhead: device: /dev/so101_cam_overhead" in out


def test_without_a_rules_path_the_rules_go_to_stdout_and_the_rest_to_stderr(desk, capsys) -> None:
    rig_file, root = desk
    assert main([f"--config_path={rig_file}", f"--system_root={root}"]) == 0
    captured = capsys.readouterr()
    assert captured.out == rules_text(udev_plan(rig_of(rig_file), root), str(rig_file))  # `> 99-so101.rules` works
    assert f"save the rules above: so101-udev --config_path={rig_file} --rules_path=99-so101.rules" in captured.err
    assert INSTALL.format("99-so101.rules") in captured.err


def test_a_device_that_is_not_there_is_named_and_the_exit_status_is_1(desk, tmp_path, capsys) -> None:
    rig_file, root = desk
    (root / "dev/serial/by-id" / BY_ID["left_leader"]).unlink()
    rules_path = tmp_path / "rules"
    assert main([f"--config_path={rig_file}", f"--system_root={root}", f"--rules_path={rules_path}"]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert f"missing: left_leader: /dev/serial/by-id/{BY_ID['left_leader']} does not exist" in out
    assert "so101_left_leader" not in rules_path.read_text()
    assert "so101_left_follower" in rules_path.read_text()


def test_the_template_with_nothing_plugged_in_makes_no_rules(tmp_path: Path, capsys) -> None:
    assert main([f"--config_path={TEMPLATE_RIG_FILE}", f"--system_root={tmp_path}"]) == 1
    err = capsys.readouterr().err
    assert (
        "missing: left_follower: /dev/serial/by-id/usb-1a86_USB_Single_Serial_REPLACE_ME_1-if00 does not exist" in err
    )
    assert "missing: camera overhead:" in err
    assert "error: no device of" in err


def test_the_virtual_rig_has_nothing_to_install(capsys) -> None:
    assert main([f"--config_path={HARDWARE_CONFIGS / 'virtual.yaml'}"]) == 0
    assert "nothing to install" in capsys.readouterr().out


def test_a_group_name_that_is_not_one_is_a_usage_error(capsys) -> None:
    assert main(["--serial_group=dial out"]) == 2
    assert "serial_group='dial out': expected a group name" in capsys.readouterr().err
