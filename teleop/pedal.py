"""A USB foot pedal as keys, read from its Linux input device (as LeRobot's DAgger pedal is).

A foot switch such as the PCsensor FootSwitch is a keyboard to the kernel: each press is an
`input_event` on /dev/input/event<N> (a stable name under /dev/input/by-id/). Reading that device
directly works whichever window has the focus, and over SSH, with no X. The layout on 64-bit Linux:

    struct input_event { struct timeval time; __u16 type; __u16 code; __s32 value; }   24 bytes
    type 1 (EV_KEY), value 1 = pressed (0 released, 2 auto-repeat, both ignored)

    with PedalReader(Path("/dev/input/by-id/usb-PCsensor_FootSwitch-event-kbd"), {"KEY_A": Key.TAKE_OVER}) as pedal:
        pedal.poll()   # [Key.TAKE_OVER] once per press
"""

import errno
import logging
import os
import queue
import select
import struct
import threading
from collections.abc import Mapping
from pathlib import Path

from robot.errors import ConfigError
from teleop.keys import Key

logger = logging.getLogger(__name__)
EVENT = struct.Struct("llHHi")  # struct input_event on 64-bit Linux: 24 bytes
EV_KEY, PRESSED = 1, 1
# The codes a foot switch is usually set to send (linux/input-event-codes.h); LeRobot's pedal uses KEY_A..KEY_C.
KEY_CODES = {"KEY_A": 30, "KEY_B": 48, "KEY_C": 46, "KEY_SPACE": 57, "KEY_ENTER": 28, "KEY_TAB": 15}


class PedalReader:
    """Reads a pedal's presses in the background; a context manager (closes the device)."""

    def __init__(self, device: Path, keys: Mapping[str, Key]) -> None:
        unknown = sorted(set(keys) - set(KEY_CODES))
        if unknown:
            raise ConfigError(f"pedal keys {unknown}: expected names from {sorted(KEY_CODES)}")
        self.device = device
        self._keys = {KEY_CODES[name]: key for name, key in keys.items()}
        self._queue: queue.Queue[Key] = queue.Queue()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._fd: int | None = None

    def __enter__(self) -> "PedalReader":
        try:
            self._fd = os.open(self.device, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as error:
            raise ConfigError(_why(self.device, error)) from error
        self._thread = threading.Thread(target=self._run, name="pedal", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def poll(self) -> list[Key]:
        """Presses since the last poll (never blocks)."""
        keys = []
        while True:
            try:
                keys.append(self._queue.get_nowait())
            except queue.Empty:
                return keys

    def _run(self) -> None:
        pending = b""
        fd = self._fd
        while fd is not None and not self._stop.is_set():
            ready, _, _ = select.select([fd], [], [], 0.1)
            if not ready:
                continue
            try:
                data = os.read(fd, EVENT.size * 16)
            except BlockingIOError:
                continue
            except OSError as error:
                logger.error("the pedal at %s stopped answering (%s): use the keys", self.device, error)
                return
            if not data:
                continue  # a FIFO whose writer went away (tests); a device never reads empty
            pending += data
            while len(pending) >= EVENT.size:
                _, _, kind, code, value = EVENT.unpack_from(pending)
                pending = pending[EVENT.size :]
                if kind == EV_KEY and value == PRESSED and code in self._keys:
                    self._queue.put(self._keys[code])


def _why(device: Path, error: OSError) -> str:
    if error.errno == errno.ENOENT:
        return f"--correction.pedal_device={device}: no such device. Next: ls -l /dev/input/by-id/ (plug the pedal in)"
    if error.errno == errno.EACCES:
        return (
            f"--correction.pedal_device={device}: permission denied. Next: sudo usermod -aG input $USER"
            " (then log in again)"
        )
    return f"--correction.pedal_device={device}: cannot be read ({error.strerror})"
