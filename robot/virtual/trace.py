"""A bounded traffic trace: every packet in and out of each virtual bus, decoded for people.

Records are JSON-friendly dicts, e.g.
    {"t": 12.003, "bus": "left_follower", "dir": "host->bus", "hex": "ff ff 01 04 02 38 02 be",
     "id": 1, "inst": "READ", "address": 56, "register": "Present_Position", "length": 2}
so a dump is one JSONL file and a golden trace is a list of (id, inst, register) tuples.
"""

import json
from collections import deque
from pathlib import Path
from typing import Any

from robot.feetech.sts3215 import register_name
from robot.virtual.protocol import BROADCAST_ID, Instruction, Packet

DEFAULT_CAPACITY = 20_000


def describe_instruction(packet: Packet) -> dict[str, Any]:
    """Decode an instruction packet into named fields."""
    try:
        inst = Instruction(packet.code)
    except ValueError:
        return {"id": packet.motor_id, "inst": f"0x{packet.code:02x}"}
    out: dict[str, Any] = {"id": "broadcast" if packet.motor_id == BROADCAST_ID else packet.motor_id}
    out["inst"] = inst.name
    p = packet.params
    if inst is Instruction.READ and len(p) >= 2:
        out |= {"address": p[0], "register": register_name(p[0]), "length": p[1]}
    elif inst in (Instruction.WRITE, Instruction.REG_WRITE) and p:
        out |= {"address": p[0], "register": register_name(p[0]), "value": int.from_bytes(p[1:], "little")}
    elif inst is Instruction.SYNC_READ and len(p) >= 2:
        out |= {"address": p[0], "register": register_name(p[0]), "length": p[1], "ids": list(p[2:])}
    elif inst is Instruction.SYNC_WRITE and len(p) >= 2:
        address, length = p[0], p[1]
        values = {}
        for i in range(2, len(p) - length, length + 1):
            values[p[i]] = int.from_bytes(p[i + 1 : i + 1 + length], "little")
        out |= {"address": address, "register": register_name(address), "values": values}
    return out


class Trace:
    """A ring buffer of traffic records shared by the buses of one rig."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._records: deque[dict[str, Any]] = deque(maxlen=capacity)
        self.enabled = True

    def host_to_bus(self, t_s: float, bus: str, packet: Packet) -> None:
        """Record an instruction the bus received."""
        if self.enabled:
            record = {"t": round(t_s, 6), "bus": bus, "dir": "host->bus", "hex": packet.raw.hex(" ")}
            self._records.append(record | describe_instruction(packet))

    def bus_to_host(self, t_s: float, bus: str, data: bytes, note: str = "") -> None:
        """Record bytes the bus sent (a status packet, or a fault's bytes)."""
        if self.enabled:
            record: dict[str, Any] = {
                "t": round(t_s, 6),
                "bus": bus,
                "dir": "bus->host",
                "hex": data.hex(" "),
            }
            if len(data) >= 6 and data[:2] == b"\xff\xff":
                record |= {"id": data[2], "error": data[4]}
            if note:
                record["fault"] = note
            self._records.append(record)

    def records(self, bus: str | None = None, last: int | None = None) -> list[dict[str, Any]]:
        """Recorded traffic, optionally of one bus and only the `last` records."""
        selected = [r for r in self._records if bus is None or r["bus"] == bus]
        return selected[-last:] if last else selected

    def clear(self) -> None:
        """Forget everything recorded so far."""
        self._records.clear()

    def dump_jsonl(self, path: Path, bus: str | None = None) -> int:
        """Write the trace as JSON lines; returns the number of records written."""
        records = self.records(bus)
        with path.open("w") as f:
            for record in records:
                f.write(json.dumps(record) + "\n")
        return len(records)
