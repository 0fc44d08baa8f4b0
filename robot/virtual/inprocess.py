"""In-process transport: a `serial.Serial` stand-in wired straight to a virtual bus.

No pseudo-terminal, no thread, no child process: the SDK's `write` feeds the bus, its `read`
returns whatever emissions are due by now. About 20x lower tail latency than a pty on a loaded
2-core machine, so most unit tests use it; end-to-end tests use the pty server, which runs the
same bus code behind a real serial device.

    with in_process_ports(model) as ports:          # ports["left_follower"] == "inproc:left_follower"
        SOFollower(SOFollowerConfig(port=ports["left_follower"], ...)).connect()
"""

import heapq
import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import serial
import serial.serialutil

from robot.virtual.rig_model import VirtualRigModel

PORT_PREFIX = "inproc:"


class InProcessSerial:
    """The subset of `serial.Serial` the Feetech SDK uses, backed by a `VirtualRigModel` bus."""

    def __init__(self, model: VirtualRigModel, bus: str, baudrate: int, lock: threading.Lock) -> None:
        self._model = model
        self._bus = bus
        self._lock = lock
        self._pending: list[tuple[float, int, bytes]] = []  # (due time, order, bytes) on the "wire"
        self._order = itertools.count()
        self._received = bytearray()
        self.port = PORT_PREFIX + bus
        self.is_open = True
        self.timeout = 0
        self._baudrate = baudrate
        self._apply_baud()

    @property
    def baudrate(self) -> int:
        """The port's baud rate (motors at another rate stay silent)."""
        return self._baudrate

    @baudrate.setter
    def baudrate(self, value: int) -> None:
        self._baudrate = value
        self._apply_baud()

    def _apply_baud(self) -> None:
        with self._lock:
            self._model.buses[self._bus].set_port_baud(self._baudrate)

    def _check(self) -> None:
        if not self.is_open:
            raise serial.serialutil.PortNotOpenError()
        if self._model.buses[self._bus].hung_up:
            raise serial.SerialException(f"{self.port}: device disconnected (virtual hang-up)")

    def _collect(self) -> None:
        now = self._model.clock()
        while self._pending and self._pending[0][0] <= now:
            self._received.extend(heapq.heappop(self._pending)[2])

    def write(self, data: bytes | bytearray | list[int]) -> int:
        """Send bytes to the bus."""
        self._check()
        payload = bytes(data)
        with self._lock:
            for emission in self._model.feed(self._bus, payload):
                heapq.heappush(self._pending, (emission.t_s, next(self._order), emission.data))
        return len(payload)

    def read(self, size: int = 1) -> bytes:
        """Non-blocking read of up to `size` bytes that have arrived by now."""
        self._check()
        self._collect()
        chunk = bytes(self._received[:size])
        del self._received[:size]
        return chunk

    @property
    def in_waiting(self) -> int:
        """Bytes arrived and not read yet."""
        self._check()
        self._collect()
        return len(self._received)

    def reset_input_buffer(self) -> None:
        """Drop bytes already received (replies still on the wire keep coming)."""
        self._collect()
        self._received.clear()

    def flush(self) -> None:
        """Output is never buffered here."""

    def close(self) -> None:
        """Close the port."""
        self.is_open = False


@contextmanager
def in_process_ports(model: VirtualRigModel) -> Iterator[dict[str, str]]:
    """Route `serial.Serial("inproc:<bus>")` to `model` while inside the block.

    Patches the `serial.Serial` the Feetech SDK constructs; every other port name still opens a
    real device, so a wrong name fails the way it would on real hardware.
    """
    import scservo_sdk.port_handler as sdk_port_handler

    lock = threading.Lock()
    real_serial = serial.Serial

    def factory(port: str | None = None, baudrate: int = 9600, **kwargs: Any) -> Any:
        if port and port.startswith(PORT_PREFIX):
            bus = port.removeprefix(PORT_PREFIX)
            if bus not in model.buses:
                raise serial.SerialException(f"[Errno 2] could not open port {port}: no such virtual bus")
            return InProcessSerial(model, bus, baudrate, lock)
        return real_serial(port=port, baudrate=baudrate, **kwargs)

    original = sdk_port_handler.serial.Serial
    sdk_port_handler.serial.Serial = factory  # type: ignore[misc]
    try:
        yield {name: PORT_PREFIX + name for name in model.buses}
    finally:
        sdk_port_handler.serial.Serial = original  # type: ignore[misc]
