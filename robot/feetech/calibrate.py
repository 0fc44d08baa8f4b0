"""LeRobot's SO-101 calibration procedure, driven by whoever moves the arm.

The steps and the file are LeRobot's (`SOFollower.calibrate`): torque off, position mode, the
arm held in the middle pose, `set_half_turn_homings`, every joint but wrist_roll moved through
its range while positions stream, wrist_roll set to the full turn, `write_calibration`, and the
JSON file in LeRobot's place. What differs: the person (or the virtual rig's scripted operator)
is a `CalibrationOperator`, and bad results are caught with a clear next step instead of
surfacing later as a broken arm.
"""

import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from lerobot.motors import MotorCalibration
from lerobot.motors.feetech import OperatingMode

from robot.errors import CalibrationError
from robot.feetech.so101_arm import SO101Arm
from robot.joints import FULL_TURN_JOINT, JOINT_NAMES

logger = logging.getLogger(__name__)
# A joint that moved less than this during range recording was probably not moved at all.
MIN_RANGE_STEPS = 400
_RECORD_PERIOD_S = 0.02


class CalibrationOperator(Protocol):
    """Whoever moves the arm: a person at the keyboard, or the virtual rig's operator."""

    def hold_middle(self, arm: SO101Arm) -> None:
        """Bring the arm to the middle of its range and return once it is there."""
        ...

    def start_sweep(self, arm: SO101Arm) -> None:
        """Start moving every joint through its whole range."""
        ...

    def sweep_done(self) -> bool:
        """Whether the sweep is over (polled while positions are recorded)."""
        ...


@dataclass(frozen=True)
class RangeProgress:
    """Live range recording: what a display shows while the joints move."""

    positions: dict[str, int]
    mins: dict[str, int]
    maxes: dict[str, int]


def calibrate_arm(
    arm: SO101Arm,
    operator: CalibrationOperator,
    on_progress: Callable[[RangeProgress], None] | None = None,
) -> dict[str, MotorCalibration]:
    """Calibrate a connected arm (connected with `require_calibration=False`) and save the file.

    Raises:
        CalibrationError: the middle pose was off by more than half a turn, or a joint did not
            move through a range; the previous file, if any, is kept as a backup.
    """
    bus = arm.device.bus
    bus.disable_torque()
    for joint in JOINT_NAMES:
        bus.write("Operating_Mode", joint, OperatingMode.POSITION.value)
    operator.hold_middle(arm)
    try:
        homings = bus.set_half_turn_homings()
    except ValueError as e:  # LeRobot: "Magnitude ... exceeds 2047"
        raise CalibrationError(
            f"{arm.ref}: the arm was not in the middle of its range ({e}). Next: hold each joint near the"
            " middle of its travel when asked, then run so101-calibrate again"
        ) from e
    recorded = [j for j in JOINT_NAMES if j != FULL_TURN_JOINT]
    mins, maxes = _record_ranges(arm, recorded, operator, on_progress)
    too_small = {j: maxes[j] - mins[j] for j in recorded if maxes[j] - mins[j] < MIN_RANGE_STEPS}
    if too_small:
        detail = ", ".join(f"{j} moved {steps} steps" for j, steps in too_small.items())
        raise CalibrationError(
            f"{arm.ref}: {detail} (expected at least {MIN_RANGE_STEPS}). Next: move every joint from one"
            " end of its travel to the other while positions are recorded, then run so101-calibrate again"
        )
    mins[FULL_TURN_JOINT], maxes[FULL_TURN_JOINT] = 0, 4095
    calibration = {
        joint: MotorCalibration(
            id=bus.motors[joint].id,
            drive_mode=0,
            homing_offset=int(homings[joint]),
            range_min=int(mins[joint]),
            range_max=int(maxes[joint]),
        )
        for joint in JOINT_NAMES
    }
    bus.write_calibration(calibration)
    _save(arm, calibration)
    return calibration


def _record_ranges(
    arm: SO101Arm,
    joints: list[str],
    operator: CalibrationOperator,
    on_progress: Callable[[RangeProgress], None] | None,
) -> tuple[dict[str, int], dict[str, int]]:
    bus = arm.device.bus
    start = bus.sync_read("Present_Position", joints, normalize=False, num_retry=5)
    mins = {j: int(v) for j, v in start.items()}
    maxes = dict(mins)
    operator.start_sweep(arm)
    while True:
        positions = {
            j: int(v) for j, v in bus.sync_read("Present_Position", joints, normalize=False, num_retry=5).items()
        }
        for joint, value in positions.items():
            mins[joint] = min(mins[joint], value)
            maxes[joint] = max(maxes[joint], value)
        if on_progress:
            on_progress(RangeProgress(positions, dict(mins), dict(maxes)))
        if operator.sweep_done():
            return mins, maxes
        time.sleep(_RECORD_PERIOD_S)


def _save(arm: SO101Arm, calibration: dict[str, MotorCalibration]) -> None:
    """Write the file through LeRobot (its format), keeping any previous file as a backup."""
    path = arm.calibration_file
    if path.exists():
        backup = path.with_name(f"{path.stem}.{datetime.now():%Y%m%d-%H%M%S}.bak.json")
        shutil.copy2(path, backup)
        logger.info("kept the previous calibration of %s as %s", arm.ref, backup)
    device = arm.device
    device.calibration = calibration
    device._save_calibration()
