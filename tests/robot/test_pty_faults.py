"""Faults that only a real serial device shows: the port vanishing under the arm, and coming back."""

import pytest

from robot.config import BusConfig, CalibrationConfig
from robot.errors import BusDisconnectedError, PortNotFoundError
from robot.feetech.so101_arm import SO101Arm
from robot.joints import Role, Side
from robot.virtual.config import TimingMode, VirtualRigConfig
from robot.virtual.launcher import VirtualRigProcess
from robot.virtual.precalibrated import write_calibration_files
from robot.virtual.rig_model import VirtualRigModel

pytestmark = pytest.mark.slow


def test_a_pulled_usb_cable_gives_a_typed_error_and_a_replug_works(tmp_path):
    config = VirtualRigConfig(runtime_dir=tmp_path / "run", timing=TimingMode.INSTANT, calibrated=True)
    write_calibration_files(VirtualRigModel(config), tmp_path / "cal", "pty")
    with VirtualRigProcess(config) as rig:
        client = rig.client()

        def arm() -> SO101Arm:
            return SO101Arm(
                Side.RIGHT,
                Role.FOLLOWER,
                rig.ports["right_follower"],
                rig_id="pty",
                calibration=CalibrationConfig(dir=tmp_path / "cal"),
                bus=BusConfig(reply_timeout_ms=20.0, read_deadline_ms=50.0),
            )

        follower = arm()
        follower.connect()
        follower.read_joints()
        client.hangup("right_follower")
        with pytest.raises(BusDisconnectedError) as info:
            follower.read_joints()
        assert "right follower" in str(info.value)
        assert "USB cable" in str(info.value)
        follower.disconnect()  # closing a vanished port is quiet
        with pytest.raises(PortNotFoundError):
            arm().connect()
        client.reopen("right_follower")
        again = arm()
        again.connect()
        assert again.read_joints().attempts >= 1
        again.disconnect()
        client.close()
