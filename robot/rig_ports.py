"""Where a rig's arms are: the configured devices, or a virtual rig (running, or started here).

    with rig_ports(config) as found:
        arm = SO101Arm(Side.LEFT, Role.FOLLOWER, found.ports["left_follower"], ...)
        if found.control: ...   # the virtual rig's control socket (scripted operator, faults)

A virtual rig already served by `so101-sim` at the configured runtime directory is used as is;
otherwise one is started for the duration of the block and stopped after it. On a virtual rig an arm
whose port is `virtual` gets its emulated bus; a port given as a path (written by so101-ports after
finding which of a factory-new rig's anonymous ttyACM<n> ports is which arm) is used as given.
"""

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from robot.cameras.virtual.fold_task import ready_plan
from robot.config import VIRTUAL_PORT, RigConfig
from robot.feetech.calibration_files import calibration_root
from robot.virtual.client import VirtualRigClient, VirtualRigControlError
from robot.virtual.config import VirtualOperator, default_runtime_dir
from robot.virtual.launcher import VirtualRigProcess
from robot.virtual.precalibrated import write_calibration_files
from robot.virtual.rig_model import VirtualRigModel
from robot.virtual.server import CONTROL_SOCKET

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class FoundPorts:
    """The arms' ports, and the virtual rig's control socket when the arms are emulated."""

    ports: dict[str, str]  # arm name -> device path
    control: Path | None  # None on a real rig
    started_here: bool  # True when this process started the virtual rig

    def client(self) -> VirtualRigClient:
        """A control connection to the virtual rig."""
        if self.control is None:
            raise VirtualRigControlError("this rig is not virtual: there is no control socket")
        return VirtualRigClient(self.control)

    def start_operator(self, operator: VirtualOperator) -> None:
        """On the virtual rig, set its scripted hands going on the leaders (looped); nothing on real arms.

        `fold_task` only brings the hands to the ready pose here: each episode's plan is played when
        the episode begins (teleop/table_writer.py), from where that episode's cloth lies.
        """
        if self.control is None or operator == VirtualOperator.IDLE:
            return
        with self.client() as client:
            if operator == VirtualOperator.FOLD_TASK:
                client.perform(ready_plan())
            else:
                client.play(operator, loop=True)


def _running(control: Path) -> dict[str, str] | None:
    if not control.exists():
        return None
    try:
        with VirtualRigClient(control, timeout_s=2.0) as client:
            return client.ports()
    except (VirtualRigControlError, OSError):
        return None


def _ensure_calibration_files(config: RigConfig) -> None:
    """A pre-calibrated virtual rig comes with LeRobot files, written where none exist yet."""
    if config.virtual is None or not config.virtual.calibrated:
        return
    model = VirtualRigModel(replace(config.virtual, state_dir=None, scenario=None))
    for path in write_calibration_files(model, calibration_root(config.calibration.dir), config.id):
        logger.info("wrote a virtual arm's calibration to %s", path)


@contextmanager
def rig_ports(config: RigConfig) -> Iterator[FoundPorts]:
    """Resolve the rig's ports for the duration of the block."""
    if config.virtual is None:
        yield FoundPorts(ports=config.ports.by_arm(), control=None, started_here=False)
        return
    _ensure_calibration_files(config)
    runtime_dir = config.virtual.runtime_dir or default_runtime_dir()
    control = runtime_dir / CONTROL_SOCKET
    ports = _running(control)
    if ports is not None:
        logger.info("using the virtual rig already running at %s", runtime_dir)
        yield FoundPorts(ports=_as_configured(config, ports), control=control, started_here=False)
        return
    with VirtualRigProcess(replace(config.virtual, runtime_dir=runtime_dir)) as process:
        endpoints = process.endpoints
        if endpoints is None:  # start() either sets them or raises
            raise VirtualRigControlError("the virtual rig started without endpoints")
        yield FoundPorts(ports=_as_configured(config, endpoints.ports), control=endpoints.control, started_here=True)


def _as_configured(config: RigConfig, emulated: dict[str, str]) -> dict[str, str]:
    """Each arm's emulated bus, unless the rig file names its port."""
    return {arm: emulated[arm] if port == VIRTUAL_PORT else port for arm, port in config.ports.by_arm().items()}
