"""Fixtures of the recording-session tests: the in-process virtual rig they run on."""

import tempfile
from pathlib import Path

import pytest

from robot.config import CalibrationConfig, RigConfig
from robot.rig import BimanualRig
from robot.virtual.config import TimingMode, VirtualRigConfig
from robot.virtual.inprocess import in_process_ports
from robot.virtual.precalibrated import write_calibration_files
from robot.virtual.rig_model import VirtualRigModel
from tests.support.session_doubles import CAMERAS


@pytest.fixture
def rig_model():
    return VirtualRigModel(VirtualRigConfig(timing=TimingMode.INSTANT, calibrated=True, tremor_steps=1.0))


@pytest.fixture
def rig_env(rig_model):
    model = rig_model
    root = Path(tempfile.mkdtemp())
    write_calibration_files(model, root, "rec")
    model.operator.play(model.trajectory("cloth_fold"), model.clock(), loop=True)
    with in_process_ports(model) as ports:

        def make(cameras=CAMERAS) -> BimanualRig:
            config = RigConfig(
                id="rec", calibration=CalibrationConfig(dir=root), cameras=cameras, virtual=VirtualRigConfig()
            )
            return BimanualRig(config, ports)

        yield make
