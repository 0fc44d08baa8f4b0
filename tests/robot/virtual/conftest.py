import pytest

from robot.virtual.config import TimingMode, VirtualRigConfig
from robot.virtual.rig_model import VirtualRigModel
from tests.support.clocks import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def model(clock: FakeClock) -> VirtualRigModel:
    return VirtualRigModel(VirtualRigConfig(timing=TimingMode.INSTANT, tremor_steps=0.0), clock=clock)
