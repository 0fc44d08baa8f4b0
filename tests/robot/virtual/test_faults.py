"""Fault rules: what they match, when they fire, what they do to the bytes, and scenario files."""

from pathlib import Path

import pytest

from robot.feetech.sts3215 import ErrorBit
from robot.virtual.faults import ScenarioError, load_scenario, rule_from_dict
from robot.virtual.protocol import BROADCAST_ID, Instruction, checksum
from tests.robot.virtual.helpers import read, transact

BUS = "left_follower"
SYNC_PRESENT = bytes([56, 2, 1, 2, 3, 4, 5, 6])


def add(model, spec):
    model.faults.append(rule_from_dict(spec))


def sync_ids(model):
    return [r[0] for r in transact(model, BUS, BROADCAST_ID, Instruction.SYNC_READ, SYNC_PRESENT)]


def test_drop_silences_one_slot_of_a_sync_read(model):
    add(model, {"match": {"bus": BUS, "motor": 4, "instruction": "SYNC_READ"}, "action": {"kind": "drop"}})
    assert sync_ids(model) == [1, 2, 3, 5, 6]
    assert read(model, BUS, 4, 56, 2) is not None  # plain READs are not matched


def test_nth_and_count_fire_exactly_those_events(model):
    add(model, {"match": {"bus": BUS, "motor": 2, "nth": 3, "count": 2}, "action": {"kind": "drop_reply"}})
    answered = [read(model, BUS, 2, 56, 2) is not None for _ in range(6)]
    assert answered == [True, True, False, False, True, True]


def test_probability_is_repeatable_with_a_seed(model):
    spec = {"match": {"bus": BUS, "probability": 0.3, "seed": 11}, "action": {"kind": "drop_reply"}}
    add(model, spec)
    first = [read(model, BUS, 1, 56, 2) is None for _ in range(200)]
    model.faults.clear()
    add(model, spec)
    second = [read(model, BUS, 1, 56, 2) is None for _ in range(200)]
    assert first == second
    assert 30 < sum(first) < 90


def test_other_buses_and_addresses_are_untouched(model):
    add(model, {"match": {"bus": "right_leader", "address": [56, 57]}, "action": {"kind": "drop"}})
    assert read(model, BUS, 1, 56, 2) is not None
    assert read(model, "right_leader", 1, 3, 2) is not None
    assert read(model, "right_leader", 1, 56, 2) is None


def test_corrupt_breaks_only_the_checksum(model):
    add(model, {"match": {"bus": BUS, "motor": 1}, "action": {"kind": "corrupt"}})
    (emission,) = model.feed(BUS, bytes.fromhex("ff ff 01 04 02 38 02 be"))
    data = emission.data
    assert data[:2] == b"\xff\xff"
    assert len(data) == 8
    assert checksum(data[2:-1]) != data[-1]


def test_truncate_garbage_and_delay_shape_the_reply(model, clock):
    add(model, {"match": {"bus": BUS, "motor": 1, "nth": 1}, "action": {"kind": "truncate", "keep_bytes": 4}})
    add(model, {"match": {"bus": BUS, "motor": 2}, "action": {"kind": "garbage", "garbage_hex": "00 13"}})
    add(model, {"match": {"bus": BUS, "motor": 3}, "action": {"kind": "delay", "delay_ms": 60}})
    (truncated,) = model.feed(BUS, bytes.fromhex("ff ff 01 04 02 38 02 be"))
    assert len(truncated.data) == 4
    (garbled,) = model.feed(BUS, bytes.fromhex("ff ff 02 02 01 fa"))
    assert garbled.data.startswith(b"\x00\x13\xff\xff\x02")
    (late,) = model.feed(BUS, bytes.fromhex("ff ff 03 02 01 f9"))
    assert late.t_s == pytest.approx(clock() + 0.060)


def test_stale_repeats_the_previous_reply(model, clock):
    torque_on = bytes.fromhex("ff ff 01 04 03 28 01 ce")
    model.feed(BUS, torque_on)
    first = read(model, BUS, 1, 56, 2)
    model.buses[BUS].motor(1).joint.position += 300  # the joint moved
    add(model, {"match": {"bus": BUS, "motor": 1, "instruction": "READ"}, "action": {"kind": "stale"}})
    assert read(model, BUS, 1, 56, 2) == first


def test_error_bits_are_sticky_until_cleared(model):
    add(model, {"match": {"bus": BUS, "motor": 5, "nth": 1}, "action": {"kind": "error_bits", "bits": ["overheat"]}})
    read(model, BUS, 5, 56, 2)
    assert read(model, BUS, 5, 65, 1) & ErrorBit.OVERHEAT
    ((_, error, _),) = transact(model, BUS, 5, Instruction.PING)
    assert error & ErrorBit.OVERHEAT


def test_unplug_with_a_duration_comes_back_power_cycled(model, clock):
    add(model, {"match": {"bus": BUS, "motor": 6, "nth": 1}, "action": {"kind": "unplug", "duration_ms": 500}})
    assert read(model, BUS, 6, 56, 2) is None
    assert read(model, BUS, 6, 56, 2) is None
    clock.advance(0.6)
    assert read(model, BUS, 6, 56, 2) is not None


def test_hangup_marks_the_bus(model):
    add(model, {"match": {"bus": BUS}, "action": {"kind": "hangup"}})
    assert read(model, BUS, 1, 56, 2) is None
    assert model.buses[BUS].hung_up


def test_scenario_files_in_the_repo_load(tmp_path):
    folder = Path(__file__).resolve().parents[3] / "hardware_configs" / "scenarios"
    files = sorted(folder.glob("*.yaml"))
    assert files
    for path in files:
        assert load_scenario(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("faults: [{match: {bus: x}}]", "needs 'action'"),
        ("faults: [{action: {kind: explode}}]", "action.kind='explode'"),
        ("faults: [{match: {instruction: JUMP}, action: {kind: drop}}]", "match.instruction='JUMP'"),
        ("faults: [{match: {probability: 2}, action: {kind: drop}}]", "match.probability=2"),
        ("faults: [{action: {kind: error_bits, bits: [melted]}}]", "action.bits=['melted']"),
        ("faults: [{match: {colour: red}, action: {kind: drop}}]", "colour"),
        ("nothing: here", "expected a mapping with a 'faults' list"),
        ("faults: [unclosed", "cannot read fault scenario"),
    ],
)
def test_bad_scenarios_say_which_field(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError, match=None) as info:
        load_scenario(path)
    assert message in str(info.value)
