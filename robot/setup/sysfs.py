"""The few facts setup reads from /sys and /dev, below a root folder so that tests can build a fake tree.

    node = resolve_under(root, "/dev/serial/by-id/usb-1a86_..._5A46-if00")    # root/dev/ttyACM0
    usb = usb_device_above(root, root / "sys/class/tty/ttyACM0/device")        # UsbDevice(1a86, 55d3, ...)
    links_to(root, "dev/v4l/by-path", node)                                    # ("/dev/v4l/by-path/...",)

Every path handed out is as the running system names it ("/dev/video2"), whatever the root. Symlinks
are followed inside the root: an absolute target (`/dev/ttyACM0`) means root/dev/ttyACM0.
"""

import os
from dataclasses import dataclass
from pathlib import Path

_MAX_LINKS = 40  # as the kernel: a longer chain of symlinks is a loop


@dataclass(frozen=True)
class UsbDevice:
    """The USB device a tty or video node belongs to, as udev's ATTRS{} and KERNELS see it."""

    kernel: str  # the USB port path, "1-1.2": the socket it is plugged into (udev's KERNELS)
    vendor_id: str  # "1a86", four hex digits (ATTRS{idVendor})
    product_id: str  # "55d3" (ATTRS{idProduct})
    serial: str | None  # ATTRS{serial}; None when the device has none (some CH340 adapters, many webcams)
    manufacturer: str = ""
    product: str = ""

    @property
    def ids(self) -> str:
        """`vendor:product`, as lsusb writes them."""
        return f"{self.vendor_id}:{self.product_id}"


def system_path(root: Path, path: Path) -> str:
    """`path` (below `root`) as the running system names it: root/dev/video0 -> "/dev/video0"."""
    try:
        relative = path.relative_to(root)
    except ValueError:
        return str(path)
    return "/" if relative == Path() else f"/{relative}"


def under_root(root: Path, path: str | Path) -> Path:
    """The system path `path` ("/dev/video0") inside `root`; already inside it, unchanged."""
    path = Path(path)
    if path.is_relative_to(root):
        return path
    return root / str(path).lstrip("/")


def resolve_under(root: Path, path: str | Path) -> Path:
    """`path` (a system path, or one inside `root`) with every symlink followed, staying inside `root`.

    The result need not exist: a dangling link resolves to where it points.
    """
    current = Path(os.path.normpath(under_root(root, path)))
    for _ in range(_MAX_LINKS):
        # Resolve the parents first (sysfs's class folders are symlinks too), then the last part.
        parent = current.parent
        if parent != current and parent != root and not _is_real_dir(parent):
            current = resolve_under(root, parent) / current.name
        if not current.is_symlink():
            return current
        target = os.readlink(current)
        joined = under_root(root, target) if os.path.isabs(target) else current.parent / target
        current = Path(os.path.normpath(joined))
    return current


def _is_real_dir(path: Path) -> bool:
    """A folder that is no symlink, nor below one (so nothing in its path needs following)."""
    return Path(os.path.realpath(path)) == path.absolute() and path.is_dir()


def read_attribute(folder: Path, name: str) -> str | None:
    """The stripped text of the sysfs attribute `folder/name`, or None if it is absent or unreadable."""
    try:
        return (folder / name).read_text(errors="replace").strip()
    except OSError:
        return None


def usb_device_above(root: Path, device_link: Path) -> UsbDevice | None:
    """The USB device at or above the sysfs folder `device_link` points to; None if there is none.

    A tty's or video node's `device` link points at a USB interface (1-1.2:1.0) or below it; the
    device (1-1.2) is the first folder up that has idVendor and idProduct.
    """
    folder = resolve_under(root, device_link)
    sys_root = root / "sys"
    while folder.is_relative_to(sys_root) and folder != sys_root:
        vendor = read_attribute(folder, "idVendor")
        product = read_attribute(folder, "idProduct")
        if vendor and product:
            return UsbDevice(
                kernel=folder.name,
                vendor_id=vendor,
                product_id=product,
                serial=read_attribute(folder, "serial") or None,
                manufacturer=read_attribute(folder, "manufacturer") or "",
                product=read_attribute(folder, "product") or "",
            )
        folder = folder.parent
    return None


def links_to(root: Path, folder: str, node: Path) -> tuple[str, ...]:
    """The system paths of the symlinks in root/`folder` (e.g. "dev/v4l/by-id") that resolve to `node`."""
    links = root / folder
    if not links.is_dir():
        return ()
    target = resolve_under(root, node)
    found = [entry for entry in sorted(links.iterdir()) if entry.is_symlink() and resolve_under(root, entry) == target]
    return tuple(system_path(root, entry) for entry in found)
