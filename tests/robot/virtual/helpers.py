"""Talk to a virtual bus in raw packets (no SDK), for emulator unit tests."""

from robot.virtual.protocol import Instruction, PacketParser, encode_instruction
from robot.virtual.rig_model import VirtualRigModel


def transact(model: VirtualRigModel, bus: str, motor_id: int, instruction: Instruction, params: bytes = b""):
    """Send one instruction; return the decoded status packets (id, error, params)."""
    emissions = model.feed(bus, encode_instruction(motor_id, instruction, params))
    parser = PacketParser()
    packets = parser.feed(b"".join(e.data for e in emissions))
    return [(p.motor_id, p.code, p.params) for p in packets]


def read(model, bus, motor_id, address, length):
    replies = transact(model, bus, motor_id, Instruction.READ, bytes([address, length]))
    if not replies:
        return None
    return int.from_bytes(replies[0][2], "little")


def write(model, bus, motor_id, address, value, length):
    return transact(model, bus, motor_id, Instruction.WRITE, bytes([address]) + value.to_bytes(length, "little"))
