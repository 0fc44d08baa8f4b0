"""Injected bus faults against our arm adapter: each gives the behaviour the issue asks for."""

import pytest
import scservo_sdk as scs

from robot.arm_pool import read_all
from robot.errors import BusDisconnectedError, MotorFaultError, MotorTimeoutError
from robot.joints import JOINT_NAMES, MOTOR_IDS
from robot.virtual.faults import rule_from_dict
from robot.virtual.profiles import FOLLOWER_PROFILE
from tests.support.servo_bounds import DEG_PER_STEP, offset_deg, offset_steps

ARM = "left_follower"
# Where a follower joint rests once it got to its goal: the fitted servo's give and gearbox play, plus
# the encoder step a degree goal is rounded to.
REACHED_DEG = offset_deg("wrist_roll") + DEG_PER_STEP
_GRIPPER_SPAN_STEPS = FOLLOWER_PROFILE["gripper"].range_max - FOLLOWER_PROFILE["gripper"].range_min
REACHED_GRIPPER_PERCENT = (offset_steps("gripper") + 1) * 100 / _GRIPPER_SPAN_STEPS


def inject(model, **spec):
    match = {"bus": ARM} | spec.pop("match", {})
    model.faults.append(rule_from_dict({"match": match, **spec}))


def truth(model, arm):
    bus = arm.device.bus
    present = {s["motor_id"]: s["present_position"] for s in model.state(ARM)[ARM]}
    normalized = bus._normalize({MOTOR_IDS[j]: present[MOTOR_IDS[j]] for j in JOINT_NAMES})
    return [normalized[MOTOR_IDS[j]] for j in JOINT_NAMES]


class SteppingClock:
    """A port clock that moves 0.5 ms each time it is read: the waits of a read become counted
    steps instead of wall time, so the deadline holds on any machine, however loaded."""

    def __init__(self, start_ms: float) -> None:
        self.ms = start_ms

    def __call__(self) -> float:
        self.ms += 0.5
        return self.ms


def test_silent_motor_gives_a_typed_error_naming_it_within_the_deadline(model, make_arm, monkeypatch):
    arm = make_arm(read_deadline_ms=25.0, reply_timeout_ms=10.0)
    handler = arm.device.bus.port_handler
    clock = SteppingClock(handler.getCurrentTime())
    monkeypatch.setattr(handler, "getCurrentTime", clock)
    inject(model, match={"motor": 4, "instruction": "SYNC_READ"}, action={"kind": "drop"})
    start_ms = clock.ms
    with pytest.raises(MotorTimeoutError) as info:
        arm.read_joints()
    assert info.value.motor == "wrist_flex"
    assert "left follower" in str(info.value)
    assert "Next:" in str(info.value)
    # Bounded by the deadline on the port's clock, retries included (LeRobot's defaults stall
    # 3 tries x 50 ms here): it gives up within one reply timeout past the 25 ms.
    assert 25.0 <= clock.ms - start_ms < 25.0 + 10.0
    assert "within 25 ms" in str(info.value)
    assert "attempts" in str(info.value)


def test_corrupt_checksum_is_retried(model, make_arm):
    arm = make_arm()
    inject(model, match={"motor": 3, "instruction": "SYNC_READ", "nth": 1}, action={"kind": "corrupt"})
    reading = arm.read_joints()
    assert reading.attempts == 2
    assert [reading.positions[j] for j in JOINT_NAMES] == pytest.approx(truth(model, arm))


def test_a_failed_sync_read_never_leaks_stale_values(model, clock, make_arm):
    """The SDK keeps the previous cycle's data for motors after a silent one; none of it may be used."""
    arm = make_arm()
    arm.read_joints()  # fills the SDK's buffers with the current positions
    arm.write_joints({"wrist_roll": 30.0, "gripper": 80.0})
    clock.advance(2.0)  # motors 5 and 6 move (the gripper at half torque, so half speed, then its tail)
    inject(model, match={"motor": 4, "instruction": "SYNC_READ", "nth": 1}, action={"kind": "drop"})
    reading = arm.read_joints()
    assert reading.attempts == 2
    assert reading.positions["wrist_roll"] == pytest.approx(30.0, abs=REACHED_DEG)
    assert reading.positions["gripper"] == pytest.approx(80.0, abs=REACHED_GRIPPER_PERCENT)


def test_late_reply_leaves_no_stale_data_desync(model, clock, make_arm):
    arm = make_arm(read_deadline_ms=25.0)
    bus = arm.device.bus
    inject(model, match={"motor": 2, "instruction": "READ", "nth": 1}, action={"kind": "delay", "delay_ms": 60})
    with pytest.raises(ConnectionError):  # LeRobot's own read, through our guarded port: no reply in time
        bus.read("Present_Position", "shoulder_lift", normalize=False)
    clock.advance(0.08)  # the late reply is now waiting in the input buffer
    assert bus.read("ID", "shoulder_lift", normalize=False) == 2  # not the stale position bytes
    assert bus.read("Model_Number", "shoulder_lift", normalize=False) == 777
    assert [arm.read_joints().positions[j] for j in JOINT_NAMES] == pytest.approx(truth(model, arm))
    assert arm.device.bus.port_handler.stale_bytes_dropped > 0


def test_the_stock_sdk_port_desyncs_on_the_same_fault(model, clock, ports):
    """Why the guard exists: the vendor SDK pairs the late reply with the next request."""
    handler = scs.PortHandler(ports[ARM])
    handler.openPort()
    packets = scs.PacketHandler(0)
    inject(model, match={"motor": 2, "instruction": "READ", "nth": 1}, action={"kind": "delay", "delay_ms": 60})
    _, comm, _ = packets.read2ByteTxRx(handler, 2, 56)
    assert comm != scs.COMM_SUCCESS
    clock.advance(0.08)
    value, comm, _ = packets.read1ByteTxRx(handler, 2, 5)  # read the ID register
    handler.closePort()
    assert comm == scs.COMM_SUCCESS
    assert value != 2  # got a byte of the stale position reply instead


def test_overload_and_overheat_bits_are_caught_by_the_status_poll(model, make_arm):
    arm = make_arm()
    inject(model, match={"motor": 6, "nth": 1}, action={"kind": "error_bits", "bits": ["overload"]})
    inject(model, match={"motor": 2, "nth": 1}, action={"kind": "error_bits", "bits": ["overheat"]})
    arm.read_joints()  # sync reads succeed and say nothing about error bits...
    health = arm.poll_health(now_s=1e9)
    assert health is not None
    assert health.faults == {"shoulder_lift": ["overheat"], "gripper": ["overload"]}  # ...the poll does
    with pytest.raises(MotorFaultError) as info:
        arm.raise_on_faults(health)
    assert info.value.motor == "shoulder_lift"
    assert info.value.bits == ["overheat"]


def test_real_overload_from_a_stalled_gripper_shows_in_the_poll(model, clock, make_arm):
    arm = make_arm()
    model.set_object(ARM, holding=True)
    arm.write_joints({"gripper": 0.0})  # squeeze the cloth
    for _ in range(40):
        clock.advance(0.1)
        arm.read_joints()
    health = arm.read_health()
    assert "overload" in health.faults.get("gripper", [])


def test_unplugged_bus_gives_a_typed_error(model, make_arm):
    arm = make_arm()
    model.buses[ARM].hung_up = True
    with pytest.raises(BusDisconnectedError) as info:
        arm.read_joints()
    assert "left follower" in str(info.value)
    with pytest.raises(BusDisconnectedError):
        arm.write_joints({"gripper": 10.0})
    arm.disconnect()  # still closes cleanly


def test_eeprom_write_made_while_locked_is_lost_after_a_power_cycle(model, clock, make_arm):
    arm = make_arm()
    bus = arm.device.bus
    original = bus.read("Min_Position_Limit", "wrist_flex", normalize=False)
    assert bus.read("Lock", "wrist_flex", normalize=False) == 1  # configure() left the follower locked
    bus.write("Torque_Enable", "wrist_flex", 0)
    bus.write("Min_Position_Limit", "wrist_flex", original + 50, normalize=False)
    assert bus.read("Min_Position_Limit", "wrist_flex", normalize=False) == original + 50
    model.buses[ARM].motor(4).power_cycle(clock())
    assert bus.read("Min_Position_Limit", "wrist_flex", normalize=False) == original


def test_a_stale_reply_of_another_length_is_never_taken_as_the_answer(model, make_arm):
    """A late 2-byte position reply must not crash the health read, and a 6-byte health reply
    must not be read as a position (both have the right motor ID and checksum)."""
    arm = make_arm()
    expected = truth(model, arm)
    arm.read_joints()  # motor 1's last reply: 2 position bytes
    inject(model, match={"motor": 1, "instruction": "SYNC_READ", "nth": 1}, action={"kind": "stale"})
    health = arm.read_health()  # motor 1 repeats its position reply first: skipped, then retried
    assert set(health.motors) == set(JOINT_NAMES)
    model.faults.clear()
    arm.read_health()  # motor 1's last reply: the 6-byte health block
    inject(model, match={"motor": 1, "instruction": "SYNC_READ", "nth": 1}, action={"kind": "stale"})
    reading = arm.read_joints()
    assert reading.attempts == 2
    assert [reading.positions[j] for j in JOINT_NAMES] == pytest.approx(expected)


# --- several arms' reads on their lines at once (read_all: request every arm, then collect) ---


def test_read_all_gives_each_arm_its_own_positions(model, clock, make_arm):
    arms = {name: make_arm(name) for name in ("left_follower", "right_follower", "left_leader")}
    arms["left_follower"].write_joints({"wrist_roll": 30.0})
    arms["right_follower"].write_joints({"wrist_roll": -30.0})
    clock.advance(1.0)  # both wrists get there
    readings = read_all(arms)
    assert readings["left_follower"].positions["wrist_roll"] == pytest.approx(30.0, abs=REACHED_DEG)
    assert readings["right_follower"].positions["wrist_roll"] == pytest.approx(-30.0, abs=REACHED_DEG)
    for name, arm in arms.items():
        assert readings[name].attempts == 1
        assert readings[name].positions == pytest.approx(arm.read_joints().positions)


def test_read_all_retries_one_arms_corrupt_reply_within_its_deadline(model, make_arm):
    arms = {name: make_arm(name) for name in ("left_follower", "right_follower")}
    inject(model, match={"motor": 3, "instruction": "SYNC_READ", "nth": 1}, action={"kind": "corrupt"})
    readings = read_all(arms)
    assert readings["left_follower"].attempts == 2
    assert readings["right_follower"].attempts == 1
    assert [readings[ARM].positions[j] for j in JOINT_NAMES] == pytest.approx(truth(model, arms[ARM]))


def test_read_all_collects_every_arm_before_raising_for_a_silent_one(model, make_arm):
    arms = {
        name: make_arm(name, read_deadline_ms=25.0, reply_timeout_ms=10.0)
        for name in ("left_follower", "right_follower")
    }
    inject(model, match={"motor": 4, "instruction": "SYNC_READ"}, action={"kind": "drop"})
    with pytest.raises(MotorTimeoutError) as info:
        read_all(arms)
    assert info.value.motor == "wrist_flex"
    model.faults.clear()
    # Nothing was left half-done: both ports answer the next read at the first try.
    assert {name: r.attempts for name, r in read_all(arms).items()} == {"left_follower": 1, "right_follower": 1}
