"""One contract for every Arm: the virtual arms always, real ones with `-m hardware`.

Real arm: set SO101_TEST_ARM_PORT (a follower's serial device), SO101_TEST_RIG_ID and, if not
LeRobot's default, SO101_TEST_CALIBRATION_DIR; the arm must be calibrated and free to move a few
degrees around where it stands.
"""

import math
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from robot.arm import Arm
from robot.config import BusConfig, CalibrationConfig
from robot.feetech.so101_arm import SO101Arm
from robot.joints import GRIPPER, JOINT_NAMES, Role, Side
from robot.virtual.config import TimingMode, VirtualRigConfig
from robot.virtual.inprocess import in_process_ports
from robot.virtual.precalibrated import write_calibration_files
from robot.virtual.rig_model import VirtualRigModel


@pytest.fixture(params=["virtual", pytest.param("hardware", marks=pytest.mark.hardware)])
def arm(request, tmp_path) -> Iterator[Arm]:
    if request.param == "virtual":
        model = VirtualRigModel(VirtualRigConfig(timing=TimingMode.INSTANT, calibrated=True, tremor_steps=0.0))
        write_calibration_files(model, tmp_path, "contract")
        with in_process_ports(model) as ports:
            follower = SO101Arm(
                Side.LEFT,
                Role.FOLLOWER,
                ports["left_follower"],
                rig_id="contract",
                calibration=CalibrationConfig(dir=tmp_path),
                bus=BusConfig(),
            )
            follower.connect()
            yield follower
            follower.disconnect()
        return
    port = os.environ.get("SO101_TEST_ARM_PORT")
    if not port:
        pytest.skip("set SO101_TEST_ARM_PORT to a calibrated follower's serial device")
    root = os.environ.get("SO101_TEST_CALIBRATION_DIR")
    follower = SO101Arm(
        Side.LEFT,
        Role.FOLLOWER,
        port,
        rig_id=os.environ.get("SO101_TEST_RIG_ID", "so101_bimanual"),
        calibration=CalibrationConfig(dir=Path(root) if root else None),
        bus=BusConfig(),
    )
    follower.connect()
    yield follower
    follower.disconnect()


def test_reads_six_finite_joints_with_timing(arm):
    reading = arm.read_joints()
    assert list(reading.positions) == list(JOINT_NAMES)
    assert all(math.isfinite(v) for v in reading.positions.values())
    assert 0 <= reading.positions[GRIPPER] <= 100
    assert reading.bus_time_s > 0
    assert reading.attempts >= 1


def test_write_returns_what_was_sent_and_the_arm_gets_there(arm):
    import time

    start = arm.read_joints().positions
    goal = dict(start) | {"wrist_flex": start["wrist_flex"] + 3.0}
    sent = arm.write_joints(goal)
    assert sent["wrist_flex"] == pytest.approx(goal["wrist_flex"], abs=0.1)
    for _ in range(50):
        time.sleep(0.02)
        if abs(arm.read_joints().positions["wrist_flex"] - sent["wrist_flex"]) < 0.5:
            break
    assert arm.read_joints().positions["wrist_flex"] == pytest.approx(sent["wrist_flex"], abs=0.5)
    arm.write_joints(start)


def test_health_reports_every_motor(arm):
    health = arm.read_health()
    assert set(health.motors) == set(JOINT_NAMES)
    assert all(5 < m.temperature_c < 80 for m in health.motors.values())
    assert all(4.0 < m.voltage_v < 14.0 for m in health.motors.values())
