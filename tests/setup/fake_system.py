"""A fake /sys and /dev under a temporary folder, laid out as Linux lays them out: the seam for hardware discovery.

    system = FakeSystem(tmp_path)
    usb = system.usb_device("1-1.2", "046d", "0825", serial="A1B2C3D4")
    system.camera(0, usb, name="C270 HD WEBCAM")                  # /dev/video0 (capture) and /dev/video1 (metadata)
    system.serial_port("ttyACM0", system.usb_device("1-1.3", "1a86", "55d3", serial="5A46083062"))

Links are relative, as udev and sysfs make them: /sys/class/video4linux/video0 points into
/sys/devices/..., whose `device` link points at the USB interface; /dev/v4l/by-id/... points at
../../video0. Device nodes are empty regular files (no driver answers them).
"""

import os
from pathlib import Path

PCI = "sys/devices/pci0000:00/0000:00:14.0"
PCI_PATH = "pci-0000:00:14.0"  # udev's ID_PATH prefix for that controller


class FakeSystem:
    """Builds sysfs and /dev entries under `root`."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def usb_device(
        self,
        kernel: str,
        vendor_id: str,
        product_id: str,
        serial: str | None = None,
        manufacturer: str = "",
        product: str = "",
    ) -> Path:
        """A USB device folder (its attributes as files), plugged into the socket `kernel` ("1-1.2")."""
        folder = self.root / PCI / f"usb{kernel.split('-')[0]}" / kernel
        folder.mkdir(parents=True, exist_ok=True)
        attributes = {"idVendor": vendor_id, "idProduct": product_id, "manufacturer": manufacturer, "product": product}
        if serial is not None:
            attributes["serial"] = serial
        for name, value in attributes.items():
            if value:
                (folder / name).write_text(f"{value}\n")
        return folder

    def id_path(self, usb: Path) -> str:
        """udev's ID_PATH for a device on the fake controller: pci-0000:00:14.0-usb-0:1.2:1.0."""
        port = usb.name.split("-", 1)[1]
        return f"{PCI_PATH}-usb-0:{port}:1.0"

    def camera(
        self, number: int, usb: Path, name: str = "USB Camera", by_id: str | None = None, metadata: bool = True
    ) -> Path:
        """/dev/video<number> (capture, index 0) and, with `metadata`, /dev/video<number+1> (index 1).

        `by_id`: its /dev/v4l/by-id name (without the -video-index suffix); None: none. Its by-path
        link is always made.
        """
        interface = usb / f"{usb.name}:1.0"
        for offset, index in ((0, 0), (1, 1)) if metadata else ((0, 0),):
            node = f"video{number + offset}"
            folder = interface / "video4linux" / node
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "name").write_text(f"{name}\n")
            (folder / "index").write_text(f"{index}\n")
            self._link(folder / "device", interface)
            self._link(self.root / "sys/class/video4linux" / node, folder)
            (self.root / "dev" / node).parent.mkdir(parents=True, exist_ok=True)
            (self.root / "dev" / node).touch()
            self._link(self.root / f"dev/v4l/by-path/{self.id_path(usb)}-video-index{index}", self.root / "dev" / node)
            if by_id is not None:
                self._link(self.root / f"dev/v4l/by-id/{by_id}-video-index{index}", self.root / "dev" / node)
        return self.root / "dev" / f"video{number}"

    def serial_port(self, tty: str, usb: Path, by_id: str | None = None, usb_serial: bool = False) -> Path:
        """/dev/<tty> on the USB device `usb`: cdc_acm (ttyACM) or, with `usb_serial`, a usb-serial driver's port.

        `by_id`: its /dev/serial/by-id name; None: none. Its by-path link is always made.
        """
        interface = usb / f"{usb.name}:1.0"
        if usb_serial:  # ch341, ftdi_sio: interface/ttyUSB0/tty/ttyUSB0, device -> the port folder
            port = interface / tty
            folder = port / "tty" / tty
        else:  # cdc_acm: interface/tty/ttyACM0, device -> the interface
            port = interface
            folder = interface / "tty" / tty
        folder.mkdir(parents=True, exist_ok=True)
        self._link(folder / "device", port)
        self._link(self.root / "sys/class/tty" / tty, folder)
        node = self.root / "dev" / tty
        node.parent.mkdir(parents=True, exist_ok=True)
        node.touch()
        suffix = "-port0" if usb_serial else ""
        self._link(self.root / f"dev/serial/by-path/{self.id_path(usb)}{suffix}", node)
        if by_id is not None:
            self._link(self.root / f"dev/serial/by-id/{by_id}", node)
        return node

    def _link(self, link: Path, target: Path) -> None:
        """A relative symlink `link` -> `target`, as sysfs and udev make them."""
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink():
            link.unlink()  # udev: the last device with a name wins it
        link.symlink_to(os.path.relpath(target, link.parent))
