"""The scripted operator's side of a calibration: middle pose on cue, then a full sweep."""

import time
from typing import Protocol

from robot.virtual.client import VirtualRigClient

SETTLE_S = 0.3  # after the hands arrive, let the joints come to rest


class _NamedArm(Protocol):
    @property
    def name(self) -> str: ...


class VirtualCalibrationOperator:
    """Implements `robot.feetech.calibrate.CalibrationOperator` with the virtual rig's hands."""

    def __init__(self, client: VirtualRigClient) -> None:
        self.client = client

    def hold_middle(self, arm: _NamedArm) -> None:
        """Move the arm to its middle pose and wait until it is there."""
        duration_s = self.client.play("calibration_pose", arms=[arm.name])
        time.sleep(duration_s + SETTLE_S)

    def start_sweep(self, arm: _NamedArm) -> None:
        """Every joint to both stops and back."""
        self.client.play("calibration_sweep", arms=[arm.name])

    def sweep_done(self) -> bool:
        """True once the sweep trajectory has finished."""
        return self.client.operator().get("playing") is None
