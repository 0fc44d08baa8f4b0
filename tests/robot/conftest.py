from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from robot.config import BusConfig, CalibrationConfig, RigConfig
from robot.feetech.so101_arm import SO101Arm
from robot.joints import Role, Side
from robot.rig import BimanualRig
from robot.safety.config import SafetyConfig
from robot.virtual.config import TimingMode, VirtualRigConfig
from robot.virtual.inprocess import in_process_ports
from robot.virtual.precalibrated import write_calibration_files
from robot.virtual.rig_model import VirtualRigModel
from tests.support.clocks import FakeClock
from tests.support.rig_files import IN_PROCESS_RIG_ID as RIG_ID


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def model(clock: FakeClock) -> VirtualRigModel:
    """The emulator on a hand-moved clock (the SDK's own timeouts still run on real time)."""
    config = VirtualRigConfig(timing=TimingMode.INSTANT, calibrated=True, tremor_steps=0.0)
    return VirtualRigModel(config, clock=clock)


@pytest.fixture
def calibration_root(tmp_path: Path, model: VirtualRigModel) -> Path:
    root = tmp_path / "calibration"
    write_calibration_files(model, root, RIG_ID)
    return root


@pytest.fixture
def ports(model: VirtualRigModel) -> Iterator[dict[str, str]]:
    with in_process_ports(model) as found:
        yield found


@pytest.fixture
def make_arm(ports, calibration_root) -> Iterator[Callable[..., SO101Arm]]:
    arms: list[SO101Arm] = []

    def make(name: str = "left_follower", *, connect: bool = True, port: str | None = None, **bus) -> SO101Arm:
        side, role = Side(name.split("_")[0]), Role(name.split("_")[1])
        arm = SO101Arm(
            side,
            role,
            port or ports[name],
            rig_id=RIG_ID,
            calibration=CalibrationConfig(dir=calibration_root),
            bus=BusConfig(**bus),
        )
        if connect:
            arm.connect()
        arms.append(arm)
        return arm

    yield make
    for arm in arms:
        arm.disconnect()


@pytest.fixture
def live_model() -> VirtualRigModel:
    """The emulator on the real clock, pre-calibrated, no tremor."""
    return VirtualRigModel(VirtualRigConfig(timing=TimingMode.INSTANT, calibrated=True, tremor_steps=0.0))


@pytest.fixture
def rig_setup(tmp_path: Path, live_model: VirtualRigModel) -> Iterator[Callable[..., BimanualRig]]:
    """Make a `BimanualRig` (not connected) on `live_model`'s in-process ports; kwargs are safety settings."""
    root = tmp_path / "rig_calibration"
    write_calibration_files(live_model, root, "rig")
    with in_process_ports(live_model) as ports:

        def make(cameras: tuple = (), **safety: object) -> BimanualRig:
            config = RigConfig(
                id="rig",
                calibration=CalibrationConfig(dir=root),
                safety=SafetyConfig(**safety),
                cameras=cameras,
                virtual=VirtualRigConfig(),
            )
            return BimanualRig(config, ports)

        yield make
