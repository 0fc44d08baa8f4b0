"""A calibration file applied at connect: written to the motors where they differ, then checked to fit the arm.

Another arm's file shifts each joint's homed frame by the difference of the two arms' homing
offsets. The joint then reads outside the file's range, or its mechanical stops fall inside the
range, and a follower sent to that end of the range pushes into a stop until its motor reports
overload. Two tests, on raw encoder steps in the file's frame:

- the present positions, once the file is applied, lie inside its ranges (nothing moves). Each of
  three real SO-101 files from other arms (tests/fixtures/foreign_calibration/) put a virtual arm's
  joint outside its range; with random homing offsets (another arm's motors, mounted anyhow) this
  alone refused ~95 % of foreign files in a simulation of the virtual arms at rest;
- on a follower whose motors did not hold the file's ranges before, the reach probe
  (robot/feetech/range_probe.py): each such joint, sent a little toward both ends of its range,
  gets there. In the same simulation it found 214 of the 215 files (in 4000) that the positions let
  through: their stop inside the range lay near where a slumped joint rests.

    connect: apply_file (written where the motors differ) -> LeRobot's configure -> check_fit:
        present positions ---------------> outside_ranges --+
        probe legs (sent to, stopped at) -> short_legs -----+-> CalibrationDoesNotFitError, motors restored

so101-doctor gives the first test's verdict without writing anything (`misfit_before_writing`).
"""

import logging
from collections.abc import Mapping
from pathlib import Path

from lerobot.motors import MotorCalibration
from lerobot.motors.feetech import FeetechMotorsBus

from robot.config import MismatchPolicy
from robot.errors import ArmRef, CalibrationDoesNotFitError, CalibrationError
from robot.feetech.calibration_files import ArmCalibration, load_calibration
from robot.feetech.motor_checks import motor_calibration, read_ignoring_errors
from robot.feetech.range_probe import ProbeConfig, ProbeLeg, probe_reach
from robot.feetech.sts3215 import REGISTERS, RESOLUTION_STEPS
from robot.joints import JOINT_NAMES, MOTOR_IDS

logger = logging.getLogger(__name__)
# A slumped joint may rest a little past the end of the range a person recorded by hand, steps (5 degrees).
RANGE_TOLERANCE_STEPS = 57
FULL_TURN = (0, RESOLUTION_STEPS - 1)  # a range with no stops (LeRobot's wrist_roll)
PROBE = ProbeConfig()
_PRESENT = REGISTERS["Present_Position"]
Ranges = Mapping[str, tuple[int, int]]  # joint -> (range_min, range_max), raw steps


def outside_ranges(
    ranges: Ranges, positions: Mapping[str, int], tolerance_steps: int = RANGE_TOLERANCE_STEPS
) -> list[str]:
    """One finding per joint whose position lies outside its range, e.g. "elbow_flex at 3412 is outside ..."."""
    findings = []
    for joint, (low, high) in ranges.items():
        position = positions[joint]
        if not low - tolerance_steps <= position <= high + tolerance_steps:
            findings.append(f"{joint} at {position} is outside the file's range {low}..{high}")
    return findings


def short_legs(legs: list[ProbeLeg], ranges: Ranges, tolerance_steps: int) -> list[str]:
    """One finding per joint that stopped short of where the probe sent it (a stop inside the range)."""
    findings: dict[str, str] = {}
    for leg in legs:
        if abs(leg.target - leg.stopped_at) > tolerance_steps and leg.joint not in findings:
            low, high = ranges[leg.joint]
            findings[leg.joint] = (
                f"{leg.joint} stopped at {leg.stopped_at} on its way from {leg.start} to {leg.target},"
                f" inside the file's range {low}..{high}"
            )
    return list(findings.values())


def positions_under(
    present: Mapping[str, int], motor_homing: Mapping[str, int], file_homing: Mapping[str, int]
) -> dict[str, int]:
    """What the joints would read with the file's homing offsets instead of the motors' (Present = actual - homing)."""
    return {j: (present[j] + motor_homing[j] - file_homing[j]) % RESOLUTION_STEPS for j in present}


def present_steps(ref: ArmRef, bus: FeetechMotorsBus) -> dict[str, int]:
    """Each joint's raw Present_Position, whatever error bits its motor reports."""
    return {j: read_ignoring_errors(ref, bus, MOTOR_IDS[j], _PRESENT, "position") for j in JOINT_NAMES}


def misfit_before_writing(
    ref: ArmRef,
    bus: FeetechMotorsBus,
    file: Path,
    file_values: Mapping[str, tuple[int, int, int]],
    motor_values: Mapping[str, tuple[int, int, int]],
) -> CalibrationDoesNotFitError | None:
    """The position test's verdict on `file` from the motors as they are, writing nothing (so101-doctor).

    `file_values`, `motor_values`: (homing_offset, range_min, range_max) per joint.
    """
    motor_homing = {j: values[0] for j, values in motor_values.items()}
    file_homing = {j: values[0] for j, values in file_values.items()}
    under = positions_under(present_steps(ref, bus), motor_homing, file_homing)
    findings = outside_ranges({j: (low, high) for j, (_, low, high) in file_values.items()}, under)
    return CalibrationDoesNotFitError(ref, str(file), findings) if findings else None


def new_ranges(file: Mapping[str, MotorCalibration], previous: Mapping[str, MotorCalibration]) -> list[str]:
    """Joints whose range the motors did not hold before the file was written (full turns left out)."""
    joints = []
    for joint, cal in file.items():
        span = (cal.range_min, cal.range_max)
        if span != FULL_TURN and span != (previous[joint].range_min, previous[joint].range_max):
            joints.append(joint)
    return joints


def apply_file(ref: ArmRef, bus: FeetechMotorsBus, file: Path, policy: MismatchPolicy) -> ArmCalibration | None:
    """Give LeRobot's `bus` the file's calibration and, where its motors hold another, write the file to them.

    Returns the motors' calibration from before the write (None: they held the file's already).

    Raises:
        CalibrationError: the motors differ and `policy` is fail.
    """
    calibration = load_calibration(file)
    bus.calibration = calibration
    if bus.is_calibrated:
        return None
    if policy is MismatchPolicy.FAIL:
        raise CalibrationError(
            f"{ref}: the motors' calibration differs from {file} (calibration.on_mismatch=fail)."
            " Next: run so101-calibrate, or set calibration.on_mismatch=write_file"
        )
    logger.warning("%s: motors differ from %s: writing the file to them", ref, file)
    previous = motors_calibration(motor_calibration(ref, bus))
    with bus.torque_disabled():
        bus.write_calibration(calibration)
    return previous


def check_fit(
    ref: ArmRef,
    bus: FeetechMotorsBus,
    file: Path,
    *,
    previous: Mapping[str, MotorCalibration] | None,
    may_move: bool,
) -> None:
    """Refuse the calibration just applied to `bus` (its `calibration`) if it does not fit the arm.

    `previous`: the motors' calibration before the file was written to them (None: they held it
    already). `may_move`: whether the arm may be probed (a follower, torque on). On a refusal the
    motors get `previous` back and torque is released.

    Raises:
        CalibrationDoesNotFitError: which joints, and what was seen.
    """
    ranges = {j: (c.range_min, c.range_max) for j, c in bus.calibration.items()}
    findings = outside_ranges(ranges, present_steps(ref, bus))
    probed = new_ranges(bus.calibration, previous) if previous is not None and may_move else []
    if not findings and probed:
        logger.info(
            "%s: %s is new to these motors: moving %s up to %g degrees each way (%g a tick) and back,"
            " to check that the file's ranges are reachable",
            ref,
            file,
            ", ".join(probed),
            PROBE.distance_deg,
            PROBE.max_step_deg,
        )
        legs = probe_reach(bus, {j: ranges[j] for j in probed}, PROBE)
        findings = short_legs(legs, ranges, PROBE.steps(PROBE.reach_tolerance_deg))
    if not findings:
        return
    bus.disable_torque(num_retry=3)
    if previous is not None:
        bus.write_calibration(dict(previous), cache=False)  # the refused file does not stay in the motors
    raise CalibrationDoesNotFitError(ref, str(file), findings)


def motors_calibration(values: Mapping[str, tuple[int, int, int]]) -> dict[str, MotorCalibration]:
    """(homing_offset, range_min, range_max) per joint, as read from the motors, in LeRobot's type."""
    return {
        j: MotorCalibration(id=MOTOR_IDS[j], drive_mode=0, homing_offset=h, range_min=low, range_max=high)
        for j, (h, low, high) in values.items()
    }
