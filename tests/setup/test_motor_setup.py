"""so101-setup's motor setup on the virtual rig's brand-new arms (every motor ID 1), with LeRobot's setup_motor.

The emulator's buses are real pseudo-terminals and LeRobot's bus code talks to them as to a USB adapter.
"""

import pytest

from robot.config import BusConfig, CalibrationConfig
from robot.doctor.arms import check_arm
from robot.doctor.rows import Status
from robot.errors import FactoryMotorsError
from robot.feetech.motor_census import LISTEN_S, PATIENT_LISTEN_S, census_expecting, parse_replies, take_census
from robot.feetech.so101_arm import SO101Arm
from robot.joints import JOINT_NAMES, Role, Side
from robot.setup.motors import ArmAlreadySetUpError, MotorSetupError, setup_arm
from robot.virtual.client import VirtualRigClient
from robot.virtual.config import TimingMode, VirtualRigConfig
from robot.virtual.launcher import VirtualRigProcess
from robot.virtual.setup_operator import VirtualMotorCue
from tests.support.rig_files import rig_yaml

ARM = "left_follower"


def _status(motor_id: int, params: bytes = b"") -> bytes:
    body = [motor_id, len(params) + 2, 0, *params]
    return bytes([0xFF, 0xFF, *body, ~sum(body) & 0xFF])


def test_the_census_counts_every_reply_repeats_and_garbled_bytes():
    assert parse_replies(_status(1) + _status(1) + _status(3)) == ([1, 1, 3], 0)
    collided = bytes(a | b for a, b in zip(_status(1), _status(2), strict=True))  # two replies on one wire
    ids, garbled = parse_replies(collided)
    assert ids == []
    assert garbled == len(collided)
    assert parse_replies(b"") == ([], 0)


@pytest.fixture
def factory_rig(tmp_path):
    config = VirtualRigConfig(
        runtime_dir=tmp_path / "run", timing=TimingMode.INSTANT, factory_new=True, realtime_priority=0
    )
    with VirtualRigProcess(config) as process, VirtualRigClient(process.endpoints.control) as client:
        yield process.endpoints.ports, client


def _arm(port: str, name: str = ARM) -> SO101Arm:
    side, role = Side(name.split("_")[0]), Role(name.split("_")[1])
    return SO101Arm(side, role, port, rig_id="box", calibration=CalibrationConfig(), bus=BusConfig())


def _ids(client: VirtualRigClient, bus: str = ARM) -> list[int]:
    return [motor["motor_id"] for motor in client.state(bus)]


def _set_up(ports: dict[str, str], client: VirtualRigClient) -> tuple[list, list[str]]:
    """setup_arm on ARM with the virtual rig's hands; (what it assigned, the lines it said)."""
    arm = _arm(ports[ARM])
    bus = arm.open_for_setup()
    lines: list[str] = []
    try:
        return setup_arm(arm.ref, bus, VirtualMotorCue(client, ARM), say=lines.append), lines
    finally:
        arm.disconnect(release_torque=False)


def test_brand_new_motors_get_ids_1_to_6_at_1_mbps_one_at_a_time(factory_rig):
    ports, client = factory_rig
    client.reopen(ARM)  # the arm's adapter comes out of its box
    client.connect_only(ARM, "shoulder_pan")
    client.poke(ARM, 1, 6, bytes([4]))  # this one was left at 115200 baud by an earlier tool
    client.connect_all(ARM)
    assert _ids(client) == [1] * 6
    assigned, lines = _set_up(ports, client)
    assert [a.joint for a in assigned] == list(reversed(JOINT_NAMES))  # gripper first, as LeRobot does
    assert {a.joint: a.found_baud for a in assigned}["shoulder_pan"] == 115_200
    assert _ids(client) == [1, 2, 3, 4, 5, 6]
    inspected = _arm(ports[ARM])
    inspected.open_for_inspection()  # LeRobot's handshake now passes: six STS3215s answer at 1 Mbps
    inspected.disconnect(release_torque=False)
    assert len(lines) == 6
    assert "shoulder_pan: id 1 at 115200 baud -> id 1 at 1 Mbps" in lines


def test_a_reply_later_than_the_quick_census_listens_is_heard_before_no_motor_is_said(tmp_path):
    # An adapter (or a loaded machine's emulator) that answers after the quick census stopped
    # listening: setup would say "no motor answers at any baud rate" with the motor on the cable.
    late_ms = 1000 * (LISTEN_S + PATIENT_LISTEN_S) / 2
    config = VirtualRigConfig(
        runtime_dir=tmp_path / "run",
        timing=TimingMode.USB,
        usb_latency_ms=late_ms,
        factory_new=True,
        realtime_priority=0,
    )
    with VirtualRigProcess(config) as process, VirtualRigClient(process.endpoints.control) as client:
        client.reopen(ARM)
        client.connect_only(ARM, "gripper")
        arm = _arm(process.endpoints.ports[ARM])
        bus = arm.open_for_setup()
        try:
            quick = take_census(bus, [1_000_000])
            patient = census_expecting(bus, lambda census: census.replies == 1, [1_000_000])
        finally:
            arm.disconnect(release_torque=False)
    assert quick.replies == 0  # the quick listen is over before the reply arrives
    assert patient.at(1_000_000).ids == (1,)


def test_a_lost_reply_during_setup_is_tried_again_from_where_the_motor_is(factory_rig):
    # The reply to the ID write is lost once (applied, no status packet): LeRobot's setup_motor
    # raises, the motor already answers as id 6; setup goes on from there and says so.
    ports, client = factory_rig
    client.reopen(ARM)
    lost_once = {"bus": ARM, "instruction": "WRITE", "address": [5, 5], "nth": 1, "count": 1}
    client.add_fault({"match": lost_once, "action": {"kind": "drop_reply"}})
    assigned, lines = _set_up(ports, client)
    assert _ids(client) == [1, 2, 3, 4, 5, 6]
    assert len(assigned) == 6
    retried = [line for line in lines if "trying again" in line]
    assert len(retried) == 1
    assert retried[0].startswith("gripper: LeRobot's setup_motor got no answer")
    assert "answers as id 6 at 1000000 baud, trying again (2 of 3)" in retried[0]


def test_a_motor_that_never_confirms_its_id_fails_after_the_bounded_tries(factory_rig):
    ports, client = factory_rig
    client.reopen(ARM)
    client.add_fault({"match": {"bus": ARM, "instruction": "WRITE", "address": [5, 5]}, "action": {"kind": "drop"}})
    arm = _arm(ports[ARM])
    bus = arm.open_for_setup()
    lines: list[str] = []
    try:
        with pytest.raises(MotorSetupError, match=r"motor gripper: LeRobot's setup_motor failed 3 time\(s\)") as failed:
            setup_arm(arm.ref, bus, VirtualMotorCue(client, ARM), say=lines.append)
    finally:
        arm.disconnect(release_torque=False)
    assert "Next: check the gripper motor's cable, then run so101-setup --arms=left_follower" in str(failed.value)
    assert sum("trying again" in line for line in lines) == 2


class _NobodyAtTheArm:
    """A cue that changes nothing: every motor stays on the cable."""

    def connect_only(self, joint: str) -> None:
        pass

    def connect_all(self) -> None:
        pass


def test_several_motors_on_the_cable_are_refused_and_none_is_renumbered(factory_rig):
    ports, client = factory_rig
    client.reopen(ARM)
    arm = _arm(ports[ARM])
    bus = arm.open_for_setup()
    try:
        with pytest.raises(MotorSetupError, match=r"motor gripper: more than one motor answers") as refused:
            setup_arm(arm.ref, bus, _NobodyAtTheArm(), say=lambda line: None)
    finally:
        arm.disconnect(release_torque=False)
    assert "Next: unplug every other motor's cable" in str(refused.value)
    assert "so101-setup --arms=left_follower" in str(refused.value)
    assert _ids(client) == [1] * 6  # LeRobot's scan would have renumbered the first one it heard


def test_factory_motors_are_named_as_such_by_connect_and_the_doctor(factory_rig, tmp_path):
    ports, client = factory_rig
    client.reopen(ARM)
    with pytest.raises(FactoryMotorsError, match="factory-fresh"):
        _arm(ports[ARM]).open_for_inspection()
    from robot.cli import parse_command
    from robot.commands.doctor import DoctorConfig

    rig = parse_command(DoctorConfig, [f"--config_path={rig_yaml(tmp_path)}"]).rig
    rows = {row.check: row for row in check_arm(ARM, ports[ARM], rig, {})}
    assert rows["motors"].status is Status.FAIL
    assert "only motor id 1 answers" in rows["motors"].detail
    assert rows["motors"].next_step == "give each motor its id: so101-setup --arms=left_follower"


def test_an_arm_already_set_up_is_left_alone(tmp_path):
    config = VirtualRigConfig(runtime_dir=tmp_path / "run", timing=TimingMode.INSTANT, realtime_priority=0)
    with VirtualRigProcess(config) as process:
        arm = _arm(process.endpoints.ports[ARM])
        bus = arm.open_for_setup()
        try:
            assert sorted(take_census(bus, [1_000_000]).at(1_000_000).ids) == [1, 2, 3, 4, 5, 6]
            with pytest.raises(ArmAlreadySetUpError, match=r"Next: calibrate it: so101-calibrate --arms=left_follower"):
                setup_arm(arm.ref, bus, _NobodyAtTheArm(), say=lambda line: None)
        finally:
            arm.disconnect(release_torque=False)
