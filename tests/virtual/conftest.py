import pytest

from robot.virtual.config import TimingMode, VirtualRigConfig
from robot.virtual.rig_model import VirtualRigModel


class FakeClock:
    """A clock the test moves by hand, so physics is exact and repeatable."""

    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def model(clock: FakeClock) -> VirtualRigModel:
    return VirtualRigModel(VirtualRigConfig(timing=TimingMode.INSTANT, tremor_steps=0.0), clock=clock)
