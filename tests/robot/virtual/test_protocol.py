"""Byte sequences of the SCS protocol, checked against the vectors captured from the vendor SDK
(robot/virtual/protocol.py): what the host sends, and what the emulator answers."""

import pytest

from robot.virtual.protocol import Instruction, PacketParser, checksum, encode_instruction, encode_status

H = bytes.fromhex


@pytest.mark.parametrize(
    ("motor_id", "instruction", "params", "wire"),
    [
        (1, Instruction.PING, b"", "ff ff 01 02 01 fb"),
        (1, Instruction.READ, H("03 02"), "ff ff 01 04 02 03 02 f3"),
        (1, Instruction.READ, H("38 02"), "ff ff 01 04 02 38 02 be"),
        (1, Instruction.WRITE, H("28 01"), "ff ff 01 04 03 28 01 ce"),
        (0xFE, Instruction.SYNC_READ, H("38 02 01 02 03 04 05 06"), "ff ff fe 0a 82 38 02 01 02 03 04 05 06 26"),
    ],
)
def test_instruction_bytes_match_the_sdk(motor_id, instruction, params, wire):
    assert encode_instruction(motor_id, instruction, params) == H(wire)


def test_sync_write_bytes_match_the_sdk():
    params = H("2a 02") + b"".join(bytes([i, 0x00, 0x08]) for i in range(1, 7))
    packet = encode_instruction(0xFE, Instruction.SYNC_WRITE, params)
    assert len(packet) == 26
    assert packet[:8] == H("ff ff fe 16 83 2a 02 01")
    assert packet[-1] == 0xF7


@pytest.mark.parametrize(
    ("motor_id", "error", "params", "wire"),
    [
        (1, 0, b"", "ff ff 01 02 00 fc"),
        (1, 0, H("09 03"), "ff ff 01 04 00 09 03 ee"),
        (1, 0, H("00 08"), "ff ff 01 04 00 00 08 f2"),
    ],
)
def test_status_bytes_match_the_sdk(motor_id, error, params, wire):
    assert encode_status(motor_id, error, params) == H(wire)


def test_checksum_is_the_inverted_byte_sum():
    assert checksum(H("01 04 02 38 02")) == 0xBE


def test_parser_resynchronises_on_header_and_skips_noise():
    parser = PacketParser()
    packets = parser.feed(H("00 13 ff") + H("ff ff 01 02 01 fb") + H("55"))
    assert [(p.motor_id, p.code) for p in packets] == [(1, Instruction.PING)]
    assert parser.discarded_bytes >= 2


def test_parser_takes_the_last_two_ff_of_three_as_header():
    packets = PacketParser().feed(H("ff ff ff 01 02 01 fb"))
    assert [(p.motor_id, p.code) for p in packets] == [(1, Instruction.PING)]


def test_parser_drops_bad_checksums_and_keeps_going():
    parser = PacketParser()
    packets = parser.feed(H("ff ff 01 02 01 fa") + H("ff ff 02 02 01 fa"))
    assert [p.motor_id for p in packets] == [2]
    assert parser.dropped_bad_checksum == 1


def test_parser_assembles_packets_split_across_reads():
    parser = PacketParser()
    wire = H("ff ff 01 04 02 38 02 be")
    assert parser.feed(wire[:3]) == []
    assert parser.feed(wire[3:5]) == []
    (packet,) = parser.feed(wire[5:])
    assert packet.params == H("38 02")


def test_emulator_answers_with_the_sdk_vectors(model):
    def ask(hex_request: str) -> list[str]:
        return [e.data.hex(" ") for e in model.feed("left_follower", H(hex_request))]

    assert ask("ff ff 01 02 01 fb") == ["ff ff 01 02 00 fc"]
    assert ask("ff ff 01 04 02 03 02 f3") == ["ff ff 01 04 00 09 03 ee"]  # model 777
    assert ask("ff ff 01 04 03 28 01 ce") == ["ff ff 01 02 00 fc"]  # torque on: status, no params
    replies = ask("ff ff fe 0a 82 38 02 01 02 03 04 05 06 26")
    assert [bytes.fromhex(r)[2] for r in replies] == [1, 2, 3, 4, 5, 6]  # one status per ID, in list order
    assert all(len(bytes.fromhex(r)) == 8 for r in replies)
    assert ask(encode_instruction(0xFE, Instruction.SYNC_WRITE, H("2a 02 01 00 08")).hex(" ")) == []
