"""Which motors answer on a bus, at which baud rates, counted reply by reply.

LeRobot's `broadcast_ping` returns one model number per ID: two motors that share an ID (every new
STS3215 is ID 1) collapse into one entry, and `setup_motor`'s scan then takes the first motor it
heard. Motor setup must refuse that case, so here the status packets of a broadcast PING are read
and counted one by one; bytes that do not parse (two replies colliding on a real wire) count too.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from lerobot.motors.feetech import FeetechMotorsBus

BROADCAST_ID = 0xFE
_PING = 0x01
LISTEN_S = 0.03  # after the ping: a reply is due within ~1 ms at 1 Mbps, 6 replies and a 500 µs delay each
QUIET_S = 0.01  # the line stays silent this long after the last byte: every reply is in
# A census whose answer would stop setup is taken again listening this long: a reply that a slow
# adapter, or a loaded machine's emulator, sends after LISTEN_S must not read as "no motor". Only a
# failing census pays it, so a working rig's setup stays as quick.
PATIENT_LISTEN_S = 0.25


def _ping_packet() -> bytes:
    body = [BROADCAST_ID, 2, _PING]
    return bytes([0xFF, 0xFF, *body, ~sum(body) & 0xFF])


@dataclass(frozen=True)
class BaudCensus:
    """What a broadcast PING at one baud rate heard."""

    baud: int
    ids: tuple[int, ...]  # the ID of every well-formed reply, repeats kept
    garbled_bytes: int = 0  # bytes that were not part of a well-formed reply (colliding replies)

    @property
    def heard(self) -> bool:
        """Anything came back at this baud rate."""
        return bool(self.ids) or self.garbled_bytes > 0


@dataclass(frozen=True)
class Census:
    """Every baud rate's answers on one bus."""

    by_baud: tuple[BaudCensus, ...] = field(default_factory=tuple)

    @property
    def replies(self) -> int:
        """Well-formed replies at every baud rate together."""
        return sum(len(b.ids) for b in self.by_baud)

    @property
    def garbled(self) -> bool:
        """Some bytes did not parse: more than one motor answered at once."""
        return any(b.garbled_bytes for b in self.by_baud)

    def at(self, baud: int) -> BaudCensus | None:
        """The census at `baud`, if it was taken."""
        return next((b for b in self.by_baud if b.baud == baud), None)

    def describe(self) -> str:
        """e.g. "id 1 at 1000000 baud, id 1 at 1000000 baud"."""
        parts = [f"id {i} at {b.baud} baud" for b in self.by_baud for i in b.ids]
        parts += [f"{b.garbled_bytes} garbled bytes at {b.baud} baud" for b in self.by_baud if b.garbled_bytes]
        return ", ".join(parts) or "nothing"


def parse_replies(data: bytes) -> tuple[list[int], int]:
    """The IDs of the well-formed status packets in `data`, and how many bytes were not part of one."""
    ids: list[int] = []
    garbled = 0
    i = 0
    while i < len(data):
        if data[i : i + 2] != b"\xff\xff" or i + 4 > len(data):
            garbled += 1
            i += 1
            continue
        motor_id, length = data[i + 2], data[i + 3]
        end = i + 4 + length
        if end > len(data) or length < 2 or motor_id == 0xFF:
            garbled += 1
            i += 1
            continue
        checksum = ~sum(data[i + 2 : end - 1]) & 0xFF
        if data[end - 1] != checksum:
            garbled += 1
            i += 1
            continue
        ids.append(motor_id)
        i = end
    return ids, garbled


def _gather(bus: FeetechMotorsBus, listen_s: float, quiet_s: float) -> bytes:
    """What arrives until `listen_s` has passed and the line has then been silent for `quiet_s`."""
    port = bus.port_handler
    data = bytearray()
    deadline = time.monotonic() + listen_s
    last_byte = time.monotonic()
    while True:
        waiting = port.ser.in_waiting
        if waiting:
            data += port.ser.read(waiting)
            last_byte = time.monotonic()
        now = time.monotonic()
        if now >= deadline and now - last_byte >= quiet_s:
            return bytes(data)
        time.sleep(0.001)


def _listen(bus: FeetechMotorsBus, listen_s: float) -> bytes:
    if listen_s > LISTEN_S:  # a patient census: an earlier ping's late replies must not count as motors
        _gather(bus, 0.0, listen_s)
    bus.port_handler.clearPort()
    bus.port_handler.ser.write(_ping_packet())
    return _gather(bus, listen_s, QUIET_S)


def take_census(bus: FeetechMotorsBus, bauds: list[int] | None = None, listen_s: float = LISTEN_S) -> Census:
    """Broadcast a PING at each baud rate (default: the rates LeRobot's `setup_motor` scans).

    The bus is left at its default baud rate (1 Mbps) afterwards.
    """
    rates = bauds or list(bus.model_baudrate_table["sts3215"])
    results = []
    try:
        for baud in rates:
            bus.set_baudrate(baud)
            ids, garbled = parse_replies(_listen(bus, listen_s))
            results.append(BaudCensus(baud, tuple(ids), garbled))
    finally:
        bus.set_baudrate(bus.default_baudrate)
    return Census(tuple(results))


def census_expecting(
    bus: FeetechMotorsBus, expected: Callable[[Census], bool], bauds: list[int] | None = None
) -> Census:
    """A census; if it is not what `expected` accepts, the census taken again at PATIENT_LISTEN_S.

    The second census is the answer: on a healthy bus it only confirms the first.
    """
    census = take_census(bus, bauds)
    return census if expected(census) else take_census(bus, bauds, PATIENT_LISTEN_S)
