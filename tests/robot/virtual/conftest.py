import pytest

from robot.virtual.config import ServoDynamics, TimingMode, VirtualRigConfig
from robot.virtual.rig_model import VirtualRigModel
from tests.support.clocks import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def model(clock: FakeClock) -> VirtualRigModel:
    # Explicitly the ideal servo: every behaviour test here pins what `ideal` does.
    config = VirtualRigConfig(timing=TimingMode.INSTANT, tremor_steps=0.0, dynamics=ServoDynamics.IDEAL)
    return VirtualRigModel(config, clock=clock)
