"""udev rules that give the rig's four USB-serial adapters and its cameras fixed names and permissions.

    plan = udev_plan(rig, Path("/"))      # one rule per device, found from the rig file's ports and cameras
    text = rules_text(plan, "my_rig.yaml")
    install_command(Path("99-so101.rules"))   # sudo cp ... && sudo udevadm control --reload-rules && ...

Each port in the rig file (a /dev/serial/by-id/... link, or /dev/ttyACM0) is followed to its tty,
and sysfs gives the adapter's vendor, product and serial number: the rule matches those
(ATTRS{idVendor}, ATTRS{idProduct}, ATTRS{serial}), adds /dev/so101_<arm>, and lets the group
read and write it (MODE="0660", GROUP="dialout"). An adapter without a serial number (some CH340s),
or two with the same one, is matched by its USB socket instead (KERNELS=="1-1.2"), with a note: it
must stay in that socket. Cameras alike (/dev/so101_cam_<name>, GROUP="video"), by serial number,
else by the socket's ID_PATH (the name /dev/v4l/by-path uses). Nothing is installed here.
"""

import re
import shlex
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from robot.cameras.config import OpenCVCameraConfig
from robot.config import RigConfig
from robot.setup.sysfs import UsbDevice, links_to, read_attribute, resolve_under, system_path, usb_device_above

RULES_FILE = "/etc/udev/rules.d/99-so101.rules"  # 99: after the rules that make by-id, by-path and ID_PATH
_SAFE_VALUE = re.compile(r"^[A-Za-z0-9 ._:+-]+$")  # what goes between a rule's quotes unescaped
_LINK_PART = re.compile(r"[^A-Za-z0-9_.-]")
_INDEX_SUFFIX = re.compile(r"-video-index\d+$")


@dataclass(frozen=True)
class DeviceRule:
    """One device's rule, and what the person should know about it."""

    subject: str  # "left_follower", "camera overhead"
    link: str  # the name it gets, "/dev/so101_left_follower"
    rule: str  # the udev rule, one line
    note: str = ""  # one line when the rule names a USB socket rather than a serial number


@dataclass(frozen=True)
class UdevPlan:
    """The rules for the devices found, and one line for each device that was not."""

    ports: tuple[tuple[str, DeviceRule], ...]  # (arm name, rule), in the rig's order
    cameras: tuple[tuple[str, DeviceRule], ...]  # (camera name, rule)
    missing: tuple[str, ...]  # "left_leader: /dev/serial/by-id/... does not exist. Next: ..."

    @property
    def rules(self) -> tuple[DeviceRule, ...]:
        """Every rule, ports first."""
        return tuple(rule for _, rule in (*self.ports, *self.cameras))


def udev_plan(
    rig: RigConfig, root: Path = Path("/"), serial_group: str = "dialout", camera_group: str = "video"
) -> UdevPlan:
    """Rules for the rig's real ports and OpenCV cameras, read from sysfs under `root`."""
    missing: list[str] = []
    ports = [] if rig.is_virtual else _found(_port_devices(rig, root, missing))
    cameras = _found(_camera_devices(rig, root, missing))
    port_rules = _rules(ports, "tty", serial_group, lambda name: f"so101_{name}")
    camera_rules = _rules(cameras, "video4linux", camera_group, lambda name: f"so101_cam_{name}")
    return UdevPlan(tuple(port_rules), tuple(camera_rules), tuple(missing))


def rules_text(plan: UdevPlan, source: str) -> str:
    """The rules file: a header saying where it came from, then one commented rule per device."""
    lines = [
        f"# {RULES_FILE}: fixed names and permissions for the so101 rig's devices.",
        f"# Written by so101-udev from {source}; install it as the line after the rules says.",
    ]
    for rule in plan.rules:
        lines += ["", f"# {rule.subject} -> {rule.link}" + (f" ({rule.note})" if rule.note else ""), rule.rule]
    return "\n".join(lines) + "\n"


def install_command(rules_file: Path | str) -> str:
    """The commands that install and apply the rules (printed for the person, never run here)."""
    return (
        f"sudo cp {shlex.quote(str(rules_file))} {RULES_FILE} && sudo udevadm control --reload-rules "
        "&& sudo udevadm trigger"
    )


@dataclass(frozen=True)
class _Device:
    name: str  # arm or camera name
    usb: UsbDevice
    index: str | None = None  # a video node's ATTR{index}; None for a tty
    id_path: str | None = None  # udev's ID_PATH (by-path's name without its suffix), if known
    by_path: str | None = None  # the /dev/.../by-path link, for the note


def _port_devices(rig: RigConfig, root: Path, missing: list[str]) -> list[_Device | None]:
    devices: list[_Device | None] = []
    seen: dict[Path, str] = {}  # node -> the arm that named it first
    for arm, port in rig.ports.by_arm().items():
        node = resolve_under(root, port)
        usb = usb_device_above(root, root / "sys/class/tty" / node.name / "device") if node.exists() else None
        if node in seen:
            again = f"plug in one arm at a time, find it in `ls -l /dev/serial/by-id/`, set ports.{arm}"
            missing.append(f"{arm}: {port} is the adapter of {seen[node]} too; each arm has its own. Next: {again}")
            devices.append(None)
            continue
        seen[node] = arm
        if not node.exists():
            missing.append(
                f"{arm}: {port} does not exist (unplugged, or still the template's value). Next: plug it "
                f"in, find it with `ls -l /dev/serial/by-id/`, and set ports.{arm}"
            )
        elif usb is None:
            missing.append(
                f"{arm}: {port} ({system_path(root, node)}) is no USB device udev can name. Next: check "
                f"`udevadm info {system_path(root, node)}`"
            )
        by_path = next(iter(links_to(root, "dev/serial/by-path", node)), None)
        devices.append(_Device(arm, usb, by_path=by_path) if usb is not None else None)
    return devices


def _camera_devices(rig: RigConfig, root: Path, missing: list[str]) -> list[_Device | None]:
    devices: list[_Device | None] = []
    for camera in rig.cameras:
        if not isinstance(camera, OpenCVCameraConfig):
            continue
        device = f"/dev/video{camera.device}" if camera.device.isdigit() else camera.device
        node = resolve_under(root, device)
        sys_node = root / "sys/class/video4linux" / node.name
        usb = usb_device_above(root, sys_node / "device") if node.exists() else None
        if usb is None:
            why = (
                "does not exist (unplugged, or still the template's value)" if not node.exists() else "is no USB camera"
            )
            missing.append(
                f"camera {camera.name}: {camera.device} {why}. Next: so101-cameras --config_path=FILE "
                "--write=true finds and writes the cameras"
            )
            devices.append(None)
            continue
        by_path = next(iter(links_to(root, "dev/v4l/by-path", node)), None)
        id_path = _INDEX_SUFFIX.sub("", Path(by_path).name) if by_path else None
        index = read_attribute(sys_node, "index") or "0"
        devices.append(_Device(camera.name, usb, index=index, id_path=id_path, by_path=by_path))
    return devices


def _found(devices: list[_Device | None]) -> list[_Device]:
    return [device for device in devices if device is not None]


def _rules(
    devices: list[_Device], subsystem: str, group: str, link_of: Callable[[str], str]
) -> list[tuple[str, DeviceRule]]:
    """A rule per device: by serial number where it is the device's own, else by its USB socket."""
    serials = Counter((d.usb.vendor_id, d.usb.product_id, d.usb.serial) for d in devices if _usable(d.usb.serial))
    rules = []
    for device in devices:
        usb = device.usb
        link = _LINK_PART.sub("_", link_of(device.name))
        subject = device.name if device.index is None else f"camera {device.name}"
        match = [f'SUBSYSTEM=="{subsystem}"']
        note = ""
        own_serial = _usable(usb.serial) and serials[(usb.vendor_id, usb.product_id, usb.serial)] == 1
        if own_serial:
            match += [
                f'ATTRS{{idVendor}}=="{usb.vendor_id}"',
                f'ATTRS{{idProduct}}=="{usb.product_id}"',
                f'ATTRS{{serial}}=="{usb.serial}"',
            ]
        else:
            why = "no serial number" if not _usable(usb.serial) else f"its serial number {usb.serial} is not its own"
            alternative = f"; or use {device.by_path}" if device.by_path else ""
            note = f"{usb.ids} has {why}: named by its USB socket {usb.kernel}, keep it there{alternative}"
            if device.id_path is not None:
                match.append(f'ENV{{ID_PATH}}=="{device.id_path}"')
            else:
                match += [
                    f'KERNELS=="{usb.kernel}"',
                    f'ATTRS{{idVendor}}=="{usb.vendor_id}"',
                    f'ATTRS{{idProduct}}=="{usb.product_id}"',
                ]
        if device.index is not None:
            match.append(f'ATTR{{index}}=="{device.index}"')  # the capture node, not the metadata one
        match += [f'SYMLINK+="{link}"', 'MODE="0660"', f'GROUP="{group}"']
        rules.append((device.name, DeviceRule(subject, f"/dev/{link}", ", ".join(match), note)))
    return rules


def _usable(serial: str | None) -> bool:
    """A serial number a rule can match as written (no quotes, no control characters)."""
    return serial is not None and _SAFE_VALUE.match(serial) is not None
