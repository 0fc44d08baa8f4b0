"""Which cameras are plugged in: V4L2 capture nodes, their stable names, and names two cameras share.

    cameras = discover_cameras(Path("/"))      # [FoundCamera(number=0, device="/dev/video0", ...), ...]
    cameras = rig_virtual_cameras(rig)        # the virtual rig: its rendered cameras, numbered alike
    cameras = cameras_to_choose(rig)          # whichever of the two the rig has, real ones with their modes
    camera.stable_device                      # what the rig file should say

A UVC camera makes two nodes, /dev/videoN (capture) and /dev/videoN+1 (metadata); only capture
nodes are listed. udev names each in /dev/v4l/by-id (vendor, model, serial) and /dev/v4l/by-path
(the USB socket). Identical webcams without a serial number get the same by-id name, which then
points at whichever was plugged in last: for those, by-path is the stable name (as long as each
stays in its socket).
"""

import fcntl
import os
import re
import stat
import struct
from dataclasses import dataclass, replace
from pathlib import Path

from robot.cameras.config import VirtualCameraConfig
from robot.config import RigConfig
from robot.errors import RobotError
from robot.setup.camera_modes import CameraMode, camera_modes
from robot.setup.sysfs import UsbDevice, links_to, read_attribute, system_path, under_root, usb_device_above

_VIDEO_NODE = re.compile(r"^video(\d+)$")
# struct v4l2_capability: driver[16] card[32] bus_info[32] version capabilities device_caps reserved[3]
_CAPABILITY = struct.Struct("16s32s32sIII12x")
_VIDIOC_QUERYCAP = (2 << 30) | (_CAPABILITY.size << 16) | (ord("V") << 8)  # _IOR('V', 0, struct v4l2_capability)
_CAP_VIDEO_CAPTURE = 0x00000001
_CAP_VIDEO_CAPTURE_MPLANE = 0x00001000
_CAP_DEVICE_CAPS = 0x80000000  # device_caps is filled in: the capabilities of this node, not the whole device


class NoCamerasError(RobotError):
    """There is no camera to choose from."""


@dataclass(frozen=True)
class FoundCamera:
    """One camera the person can choose: a capture node (or a virtual rig's camera) and its names."""

    number: int  # what the person types to give it a role; its tile on the contact sheet shows it
    device: str  # /dev/video2; a virtual camera: "virtual:<name>"
    card: str  # the driver's name for it, e.g. "HD Pro Webcam C920"
    by_id: tuple[str, ...] = ()  # /dev/v4l/by-id/... links to it (vendor, model, serial)
    by_path: tuple[str, ...] = ()  # /dev/v4l/by-path/... links to it (the USB socket)
    usb: UsbDevice | None = None
    shares_by_id_with: tuple[int, ...] = ()  # numbers of identical cameras that get the same by-id name
    modes: tuple[CameraMode, ...] = ()  # what it offers; empty: not known
    virtual: VirtualCameraConfig | None = None  # set for a virtual rig's camera

    @property
    def stable_device(self) -> str:
        """The name for the rig file: by-id if it is this camera's alone, else by-path, else the node."""
        if self.by_id and not self.shares_by_id_with:
            return self.by_id[0]
        if self.by_path:
            return self.by_path[0]
        return self.device

    @property
    def naming_note(self) -> str:
        """Why `stable_device` is what it is, when it is not the by-id name; "" otherwise."""
        if self.virtual is not None or (self.by_id and not self.shares_by_id_with):
            return ""
        if self.shares_by_id_with:
            others = ", ".join(str(n) for n in self.shares_by_id_with)
            why = f"shares its by-id name with camera {others} (no serial number)"
        else:
            why = "has no by-id name"
        if self.by_path:
            return f"{why}: use by-path, and keep it in the same USB socket"
        return f"{why} and no by-path name: {self.device} may change at the next boot (so101-udev can name it)"


def discover_cameras(root: Path = Path("/")) -> list[FoundCamera]:
    """The capture nodes under root/sys/class/video4linux, numbered 0, 1, ... in node order."""
    classes = root / "sys/class/video4linux"
    if not classes.is_dir():
        return []
    nodes = sorted((int(m.group(1)), entry) for entry in classes.iterdir() if (m := _VIDEO_NODE.match(entry.name)))
    found: list[FoundCamera] = []
    for _, entry in nodes:
        node = root / "dev" / entry.name
        if not _is_capture_node(entry, node):
            continue
        found.append(
            FoundCamera(
                number=len(found),
                device=system_path(root, node),
                card=read_attribute(entry, "name") or entry.name,
                by_id=links_to(root, "dev/v4l/by-id", node),
                by_path=links_to(root, "dev/v4l/by-path", node),
                usb=usb_device_above(root, entry / "device"),
            )
        )
    return _with_shared_names(found)


def cameras_to_choose(rig: RigConfig, root: Path = Path("/")) -> list[FoundCamera]:
    """The virtual rig's own cameras, or the capture devices plugged in with the modes each offers.

    Raises:
        NoCamerasError: there are none.
    """
    if rig.is_virtual:
        cameras = rig_virtual_cameras(rig)
        if not cameras:
            raise NoCamerasError(
                "the virtual rig file has no `kind: virtual` cameras. Next: so101-cameras "
                "--config_path=hardware_configs/virtual.yaml"
            )
        return cameras
    found = discover_cameras(root)
    if not found:
        where = under_root(root, "/sys/class/video4linux")
        raise NoCamerasError(
            f"no cameras found ({where} lists no capture device). Next: plug the cameras in, check `ls -l "
            "/dev/v4l/by-path/`, then run so101-cameras --config_path=FILE again"
        )
    return [replace(camera, modes=camera_modes(str(under_root(root, camera.device)))) for camera in found]


def rig_virtual_cameras(rig: RigConfig) -> list[FoundCamera]:
    """The rig file's virtual cameras as choices, numbered in the file's order."""
    virtual = [camera for camera in rig.cameras if isinstance(camera, VirtualCameraConfig)]
    cameras = []
    for i, camera in enumerate(virtual):
        card = f"virtual camera ({camera.view} view)"
        cameras.append(FoundCamera(number=i, device=f"virtual:{camera.name}", card=card, virtual=camera))
    return cameras


def _is_capture_node(entry: Path, node: Path) -> bool:
    """Whether a video4linux node captures video: its capabilities where the node answers, else index 0."""
    capabilities = _device_caps(node)
    if capabilities is not None:
        return bool(capabilities & (_CAP_VIDEO_CAPTURE | _CAP_VIDEO_CAPTURE_MPLANE))
    index = read_attribute(entry, "index")
    return index is None or index == "0"  # a UVC camera's capture node comes first, its metadata node second


def _device_caps(node: Path) -> int | None:
    """VIDIOC_QUERYCAP's capabilities of this node; None when it is no character device or does not answer."""
    try:
        if not stat.S_ISCHR(os.stat(node).st_mode):
            return None
        descriptor = os.open(node, os.O_RDWR | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        reply = fcntl.ioctl(descriptor, _VIDIOC_QUERYCAP, bytes(_CAPABILITY.size))
    except OSError:
        return None
    finally:
        os.close(descriptor)
    *_, capabilities, device_caps = _CAPABILITY.unpack(reply)
    return device_caps if capabilities & _CAP_DEVICE_CAPS else capabilities


def _with_shared_names(cameras: list[FoundCamera]) -> list[FoundCamera]:
    """Each camera with the numbers of the others udev gives the same by-id name (same vendor, model, serial)."""

    def identity(camera: FoundCamera) -> tuple[str, str, str] | None:
        usb = camera.usb
        if usb is None:
            return None
        return (usb.manufacturer or usb.vendor_id, usb.product or usb.product_id, usb.serial or "")

    def twins(camera: FoundCamera) -> tuple[int, ...]:
        mine = identity(camera)
        if mine is None or camera.usb is None:
            return ()
        # Another USB device with the same name; two nodes of one device differ in their index instead.
        return tuple(o.number for o in cameras if o.usb and o.usb.kernel != camera.usb.kernel and identity(o) == mine)

    return [replace(camera, shares_by_id_with=twins(camera)) for camera in cameras]
