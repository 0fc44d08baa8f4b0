"""Which port is which arm: by replugging its cable (a scripted port listing) or by moving it (on the virtual rig)."""

import os

import pytest

from robot.config import BusConfig, CalibrationConfig
from robot.feetech.so101_arm import SO101Arm
from robot.joints import Role, Side
from robot.setup.ports import PortDiscoveryError, find_by_replug, identify_by_motion, list_serial_ports
from robot.virtual.client import VirtualRigClient
from robot.virtual.config import TimingMode, VirtualRigConfig
from robot.virtual.launcher import VirtualRigProcess
from robot.virtual.setup_operator import VirtualHands


class Desk:
    """The ports a machine lists while a person plugs and pulls cables on cue."""

    def __init__(self, plugged: set[str], cables: dict[str, str]) -> None:
        self.plugged = set(plugged)
        self.cables = cables  # arm -> the port its cable gives
        self.cues: list[str] = []

    def listing(self) -> set[str]:
        return set(self.plugged)

    def replug(self, arm: str) -> None:
        self.cues.append(arm)
        self.plugged ^= {self.cables[arm]}


def test_the_port_that_appears_is_the_arms():
    desk = Desk({"/dev/ttyACM0"}, {"left_follower": "/dev/ttyACM1"})
    assert find_by_replug("left_follower", desk.listing, desk.replug, timeout_s=1) == "/dev/ttyACM1"
    assert desk.cues == ["left_follower"]


def test_a_port_that_vanishes_is_the_arms_and_is_asked_back():
    desk = Desk({"/dev/ttyACM0", "/dev/ttyACM1"}, {"right_leader": "/dev/ttyACM0"})
    assert find_by_replug("right_leader", desk.listing, desk.replug, timeout_s=1) == "/dev/ttyACM0"
    assert desk.cues == ["right_leader", "right_leader"]
    assert "/dev/ttyACM0" in desk.plugged


def test_nothing_changing_or_two_ports_changing_is_refused():
    desk = Desk({"/dev/ttyACM0"}, {})
    with pytest.raises(PortDiscoveryError, match=r"no serial port appeared or vanished.*Next: .*so101-ports"):
        find_by_replug("left_leader", desk.listing, lambda arm: None, timeout_s=0.2)
    hub = Desk(set(), {})

    def two_at_once(arm: str) -> None:
        hub.plugged |= {"/dev/ttyACM0", "/dev/ttyACM1"}

    with pytest.raises(PortDiscoveryError, match="2 ports changed at once"):
        find_by_replug("left_leader", hub.listing, two_at_once, timeout_s=1)


def test_serial_ports_are_listed_by_their_stable_names(tmp_path):
    dev = tmp_path / "dev"
    (dev / "serial" / "by-id").mkdir(parents=True)
    for node in ("ttyACM0", "ttyACM1", "ttyUSB0"):
        (dev / node).touch()
    os.symlink(dev / "ttyACM1", dev / "serial" / "by-id" / "usb-1a86_USB_Single_Serial_58FA-if00")
    stable = dev / "serial" / "by-id" / "usb-1a86_USB_Single_Serial_58FA-if00"
    assert list_serial_ports(dev) == {str(dev / "ttyACM0"), str(dev / "ttyUSB0"), str(stable)}


def test_the_arm_that_moves_is_found_on_the_virtual_rig(tmp_path):
    config = VirtualRigConfig(runtime_dir=tmp_path / "run", timing=TimingMode.INSTANT, realtime_priority=0)
    with VirtualRigProcess(config) as process, VirtualRigClient(process.endpoints.control) as client:
        ports = process.endpoints.ports
        hands = VirtualHands(client, ports)
        arms = [
            SO101Arm(Side.LEFT, Role.LEADER, port, rig_id="box", calibration=CalibrationConfig(), bus=BusConfig())
            for port in ports.values()
        ]
        try:
            readers = {}
            for arm in arms:
                bus = arm.open_for_setup()
                readers[arm.port] = lambda bus=bus: dict(bus.sync_read("Present_Position", normalize=False))
            assert identify_by_motion("right_leader", readers, hands.wiggle, timeout_s=10) == ports["right_leader"]
            hands.release("right_leader")
            with pytest.raises(PortDiscoveryError, match="no arm moved"):
                identify_by_motion("left_leader", readers, lambda arm: None, timeout_s=0.5)
        finally:
            for arm in arms:
                arm.disconnect(release_torque=False)
