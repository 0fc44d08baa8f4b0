"""The Feetech SCS packet protocol (protocol 0, STS series): framing, checksums, a streaming parser.

    instruction:  FF FF ID LEN INST P1..Pn CHK     LEN = n + 2
    status:       FF FF ID LEN ERR  P1..Pn CHK     CHK = ~(ID + LEN + INST|ERR + sum(P)) & 0xFF

The parser resynchronises on `FF FF` and silently drops packets with a bad checksum, as a servo
does; it counts what it dropped so a trace can show it.
"""

from dataclasses import dataclass
from enum import IntEnum

HEADER = b"\xff\xff"
BROADCAST_ID = 0xFE
MAX_ID = 0xFC
# The vendor SDK's receive buffer; nothing longer is ever legal.
MAX_PACKET_LEN = 250


class Instruction(IntEnum):
    """Instruction codes of the SCS protocol."""

    PING = 0x01
    READ = 0x02
    WRITE = 0x03
    REG_WRITE = 0x04
    ACTION = 0x05
    RESET = 0x06
    SYNC_READ = 0x82
    SYNC_WRITE = 0x83


def checksum(body: bytes | bytearray) -> int:
    """Checksum over ID, LEN, INST/ERR and parameters."""
    return ~sum(body) & 0xFF


def encode_instruction(motor_id: int, instruction: int, params: bytes = b"") -> bytes:
    """An instruction packet, host to bus."""
    body = bytes([motor_id, len(params) + 2, instruction]) + bytes(params)
    return HEADER + body + bytes([checksum(body)])


def encode_status(motor_id: int, error: int, params: bytes = b"") -> bytes:
    """A status packet, bus to host."""
    body = bytes([motor_id, len(params) + 2, error]) + bytes(params)
    return HEADER + body + bytes([checksum(body)])


@dataclass(frozen=True)
class Packet:
    """A decoded packet; `code` is the instruction (host to bus) or the error byte (bus to host)."""

    motor_id: int
    code: int
    params: bytes

    @property
    def raw(self) -> bytes:
        """The packet's bytes on the wire."""
        return encode_instruction(self.motor_id, self.code, self.params)


class PacketParser:
    """Streaming parser: feed bytes as they arrive, get whole packets with valid checksums."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self.dropped_bad_checksum = 0
        self.discarded_bytes = 0

    def feed(self, data: bytes) -> list[Packet]:
        """Append `data` and return every complete, valid packet now available."""
        self._buffer.extend(data)
        packets: list[Packet] = []
        while True:
            packet = self._next_packet()
            if packet is None:
                return packets
            packets.append(packet)

    def _next_packet(self) -> Packet | None:
        buf = self._buffer
        while True:
            start = buf.find(HEADER)
            if start < 0:
                # Keep a trailing 0xFF: it may be the first half of the next header.
                keep = 1 if buf.endswith(b"\xff") else 0
                self.discarded_bytes += len(buf) - keep
                del buf[: len(buf) - keep]
                return None
            if start:
                self.discarded_bytes += start
                del buf[:start]
            # `FF FF FF ID ...`: the first FF is noise, the header is the last two.
            if len(buf) >= 3 and buf[2] == 0xFF:
                self.discarded_bytes += 1
                del buf[0]
                continue
            if len(buf) < 4:
                return None
            length = buf[3]
            if length < 2 or length + 4 > MAX_PACKET_LEN:
                self.discarded_bytes += 2
                del buf[:2]
                continue
            total = length + 4
            if len(buf) < total:
                return None
            body = bytes(buf[2 : total - 1])
            received = buf[total - 1]
            del buf[:total]
            if checksum(body) != received:
                self.dropped_bad_checksum += 1
                continue
            return Packet(motor_id=body[0], code=body[2], params=body[3:])

    def reset(self) -> None:
        """Forget any partial packet (after a baud change or a hang-up)."""
        self._buffer.clear()
