"""Firmware rules of the emulated STS3215, exercised through raw packets on a virtual bus."""

from robot.feetech.sts3215 import (
    MODEL_STS3215,
    decode_sign_magnitude,
    encode_sign_magnitude,
)
from robot.virtual.protocol import BROADCAST_ID, Instruction
from tests.robot.virtual.helpers import read, transact, write

BUS = "left_follower"
LOCK, TORQUE, HOMING, ID, BAUD, MIN_LIMIT, GOAL, PRESENT = 55, 40, 31, 5, 6, 9, 42, 56


def test_sign_magnitude_round_trip():
    assert encode_sign_magnitude(-5, 11) == (1 << 11) | 5
    assert decode_sign_magnitude((1 << 11) | 5, 11) == -5
    assert decode_sign_magnitude(encode_sign_magnitude(-1000, 15), 15) == -1000
    assert decode_sign_magnitude(encode_sign_magnitude(300, 10), 10) == 300


def test_identity_registers(model):
    assert read(model, BUS, 3, 3, 2) == MODEL_STS3215
    majors = {read(model, BUS, i, 0, 1) for i in range(1, 7)}
    minors = {read(model, BUS, i, 1, 1) for i in range(1, 7)}
    assert len(majors) == len(minors) == 1  # LeRobot requires one firmware per bus


def test_homing_offset_is_sign_magnitude_and_shifts_present_position(model):
    before = read(model, BUS, 1, PRESENT, 2)
    write(model, BUS, 1, HOMING, encode_sign_magnitude(-300, 11), 2)
    assert decode_sign_magnitude(read(model, BUS, 1, HOMING, 2), 11) == -300
    assert read(model, BUS, 1, PRESENT, 2) == (before + 300) % 4096  # Present = Actual - Homing


def test_eeprom_write_while_locked_is_lost_after_power_cycle(model):
    motor = model.buses[BUS].motor(2)
    write(model, BUS, 2, LOCK, 0, 1)
    write(model, BUS, 2, MIN_LIMIT, 700, 2)
    write(model, BUS, 2, LOCK, 1, 1)
    write(model, BUS, 2, MIN_LIMIT, 900, 2)
    assert read(model, BUS, 2, MIN_LIMIT, 2) == 900  # takes effect at once...
    motor.power_cycle(model.clock())
    assert read(model, BUS, 2, MIN_LIMIT, 2) == 700  # ...but only the unlocked write reached flash
    assert read(model, BUS, 2, TORQUE, 1) == 0  # and the reboot left torque off


def test_id_change_reply_carries_the_old_id(model):
    replies = write(model, BUS, 6, ID, 9, 1)
    assert [r[0] for r in replies] == [6]
    assert read(model, BUS, 9, 3, 2) == MODEL_STS3215
    assert read(model, BUS, 6, 3, 2) is None  # nobody answers to 6 any more


def test_motor_is_silent_when_the_port_baud_differs(model):
    bus = model.buses[BUS]
    bus.set_port_baud(115_200)
    assert transact(model, BUS, 1, Instruction.PING) == []
    write(model, BUS, 1, BAUD, 4, 1)  # unheard: the motor still runs at 1 Mbps
    bus.set_port_baud(1_000_000)
    assert transact(model, BUS, 1, Instruction.PING) != []
    write(model, BUS, 1, BAUD, 4, 1)  # now to 115200 (Feetech index 4); the reply still goes out
    assert transact(model, BUS, 1, Instruction.PING) == []
    bus.set_port_baud(115_200)
    assert transact(model, BUS, 1, Instruction.PING) != []


def test_broadcast_ping_answers_back_to_back_in_id_order(model):
    replies = transact(model, BUS, BROADCAST_ID, Instruction.PING)
    assert [r[0] for r in replies] == [1, 2, 3, 4, 5, 6]
    assert all(err == 0 for _, err, _ in replies)


def test_sync_read_skips_missing_ids(model):
    replies = transact(model, BUS, BROADCAST_ID, Instruction.SYNC_READ, bytes([PRESENT, 2, 1, 7, 3]))
    assert [r[0] for r in replies] == [1, 3]


def test_reg_write_waits_for_action(model):
    transact(model, BUS, 1, Instruction.REG_WRITE, bytes([LOCK, 1]))
    assert read(model, BUS, 1, LOCK, 1) == 0
    assert transact(model, BUS, BROADCAST_ID, Instruction.ACTION) == []
    assert read(model, BUS, 1, LOCK, 1) == 1


def test_response_status_level_zero_answers_only_reads_and_pings(model):
    write(model, BUS, 1, 8, 0, 1)
    assert write(model, BUS, 1, LOCK, 1, 1) == []
    assert read(model, BUS, 1, LOCK, 1) == 1
    assert transact(model, BUS, 1, Instruction.PING) != []


def test_read_only_registers_ignore_writes(model):
    write(model, BUS, 1, 3, 1234, 2)
    assert read(model, BUS, 1, 3, 2) == MODEL_STS3215


def test_torque_on_latches_goal_to_present(model):
    present = read(model, BUS, 1, PRESENT, 2)
    write(model, BUS, 1, GOAL, (present + 500) % 4096, 2)
    write(model, BUS, 1, TORQUE, 1, 1)
    assert read(model, BUS, 1, GOAL, 2) == present  # no jump to a stale goal


def test_factory_reset_keeps_the_id(model):
    write(model, BUS, 4, ID, 8, 1)
    write(model, BUS, 8, MIN_LIMIT, 1000, 2)
    transact(model, BUS, 8, Instruction.RESET)
    assert read(model, BUS, 8, MIN_LIMIT, 2) == 0
