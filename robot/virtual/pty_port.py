"""One pseudo-terminal serving a virtual bus, under a stable symlink.

Facts this relies on (measured on Linux pseudo-terminals):
- we keep our own slave fd open, so the master never sees EIO while a client closes and
  reopens the port (LeRobot does that on every baud change);
- the client's termios speed is visible on our slave fd, so motors at another baud can stay
  silent; non-standard speeds (128000, 250000) show up as BOTHER and need TCGETS2.
"""

import array
import fcntl
import logging
import os
import struct
import termios
import tty
from pathlib import Path

logger = logging.getLogger(__name__)

_SPEEDS = {
    getattr(termios, f"B{rate}"): rate
    for rate in (
        4800,
        9600,
        19200,
        38400,
        57600,
        115200,
        230400,
        460800,
        500000,
        576000,
        921600,
        1000000,
    )
    if hasattr(termios, f"B{rate}")
}
_BOTHER = 0o010000
_TCGETS2 = 0x802C542A  # _IOR('T', 0x2A, struct termios2) on x86_64 and aarch64
_TERMIOS2_FORMAT = "4I1B19B2I"  # c_iflag, c_oflag, c_cflag, c_lflag, c_line, c_cc[19], c_ispeed, c_ospeed


def read_baud(fd: int) -> int | None:
    """The output speed a client configured on this tty, in baud (None if unknown)."""
    try:
        speed = termios.tcgetattr(fd)[5]
    except termios.error:
        return None
    if speed in _SPEEDS:
        return _SPEEDS[speed]
    if speed == _BOTHER:
        buffer = array.array("B", bytes(struct.calcsize(_TERMIOS2_FORMAT)))
        try:
            fcntl.ioctl(fd, _TCGETS2, buffer, True)
        except OSError:
            return None
        return struct.unpack(_TERMIOS2_FORMAT, buffer.tobytes())[-1]
    return None


class PtyPort:
    """A raw pseudo-terminal with a stable link path, e.g. `<runtime>/left_follower`."""

    def __init__(self, link: Path) -> None:
        self.link = link
        self.master_fd = -1
        self.slave_fd = -1
        self.device = ""

    def open(self) -> None:
        """Create the pty in raw mode and point the link at it."""
        self.master_fd, self.slave_fd = os.openpty()
        tty.setraw(self.slave_fd)
        os.set_blocking(self.master_fd, False)
        self.device = os.ttyname(self.slave_fd)
        tmp = self.link.with_name(self.link.name + ".new")
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(self.device)
        tmp.replace(self.link)

    @property
    def is_open(self) -> bool:
        """Whether the pty exists (False after a hang-up)."""
        return self.master_fd >= 0

    def baud(self) -> int | None:
        """The client's configured speed."""
        return read_baud(self.slave_fd) if self.slave_fd >= 0 else None

    def read(self) -> bytes:
        """Whatever the client wrote (non-blocking)."""
        try:
            return os.read(self.master_fd, 4096)
        except BlockingIOError:
            return b""

    def write(self, data: bytes) -> None:
        """Send bytes to the client; a full buffer drops the rest, like a wire nobody reads."""
        try:
            os.write(self.master_fd, data)
        except BlockingIOError:
            logger.warning("pty %s: client not reading, dropped %d bytes", self.link.name, len(data))

    def close(self, *, remove_link: bool = True) -> None:
        """Close both ends (the client sees the device go away)."""
        for fd in (self.master_fd, self.slave_fd):
            if fd >= 0:
                os.close(fd)
        self.master_fd = self.slave_fd = -1
        if remove_link:
            self.link.unlink(missing_ok=True)
