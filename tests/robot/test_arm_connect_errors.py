"""Bad input at connect: each gives a typed error that names the arm and the next step, and
leaves nothing half-open."""

import json
import os

import pytest

from robot.config import MismatchPolicy
from robot.errors import (
    CalibrationError,
    MotorMissingError,
    MotorModelError,
    NotAServoBusError,
    PortNotFoundError,
)

ARM = "right_follower"


def test_wrong_port_path(make_arm, tmp_path):
    with pytest.raises(PortNotFoundError) as info:
        make_arm(ARM, port=str(tmp_path / "ttyUSB9"))
    message = str(info.value)
    assert "right follower" in message
    assert "ttyUSB9" in message
    assert "/dev/serial/by-id" in message


def test_a_port_that_is_not_a_servo_bus(make_arm):
    master, slave = os.openpty()  # a real serial device with nothing behind it
    try:
        with pytest.raises(NotAServoBusError) as info:
            make_arm(ARM, port=os.ttyname(slave))
        assert "no servo answered" in str(info.value)
    finally:
        os.close(master)
        os.close(slave)


def test_missing_motor(model, make_arm):
    model.buses[ARM].motor(5).unplug(None, model.clock())
    with pytest.raises(MotorMissingError) as info:
        make_arm(ARM)
    assert "wrist_roll (id 5)" in str(info.value)
    assert "cable" in str(info.value)


def test_model_mismatch(model, make_arm):
    model.buses[ARM].motor(3).poke(3, (1284).to_bytes(2, "little"))  # an SCS0009 where an STS3215 belongs
    with pytest.raises(MotorModelError) as info:
        make_arm(ARM)
    assert "elbow_flex" in str(info.value)
    assert "1284" in str(info.value)


def test_unreadable_calibration_file(make_arm, calibration_root):
    path = calibration_root / "robots" / "so_follower" / "test_rig_right.json"
    path.write_text('{"shoulder_pan": {"id": 1, ')
    with pytest.raises(CalibrationError) as info:
        make_arm(ARM)
    assert "not valid JSON" in str(info.value)
    assert "so101-calibrate" in str(info.value)


def test_calibration_with_an_impossible_range(make_arm, calibration_root):
    path = calibration_root / "robots" / "so_follower" / "test_rig_right.json"
    data = json.loads(path.read_text())
    data["elbow_flex"]["range_min"] = 3000
    data["elbow_flex"]["range_max"] = 1000
    path.write_text(json.dumps(data))
    with pytest.raises(CalibrationError, match="elbow_flex: range_min=3000"):
        make_arm(ARM)


def test_missing_calibration_file(make_arm, calibration_root):
    (calibration_root / "teleoperators" / "so_leader" / "test_rig_left.json").unlink()
    with pytest.raises(CalibrationError, match="run so101-calibrate"):
        make_arm("left_leader")


def test_motor_calibration_differing_from_the_file_is_written_by_default(model, make_arm):
    motor = model.buses[ARM].motor(1)
    motor.poke(31, (0).to_bytes(2, "little"))  # the motor forgot its homing offset
    arm = make_arm(ARM)
    assert arm.device.bus.is_calibrated


def test_or_refused_when_the_policy_says_fail(model, ports, calibration_root):
    from robot.config import BusConfig, CalibrationConfig
    from robot.feetech.so101_arm import SO101Arm
    from robot.joints import Role, Side

    model.buses[ARM].motor(1).poke(31, (0).to_bytes(2, "little"))
    arm = SO101Arm(
        Side.RIGHT,
        Role.FOLLOWER,
        ports[ARM],
        rig_id="test_rig",
        calibration=CalibrationConfig(dir=calibration_root, on_mismatch=MismatchPolicy.FAIL),
        bus=BusConfig(),
    )
    with pytest.raises(CalibrationError, match="on_mismatch=fail"):
        arm.connect()
    assert not arm.is_connected  # the port was closed again
