"""Dry arms for a replay: their calibration (hence the safety limits) and where they start.

The calibration is the rig's own files, as the real followers use them; a virtual rig without
files uses the virtual arms' factory calibration (what so101-calibrate would record on them).
"""

import numpy as np

from robot.config import RigConfig
from robot.errors import CalibrationError
from robot.feetech.calibration_files import (
    ArmCalibration,
    arm_calibration,
    calibration_path,
    calibration_root,
    load_calibration,
)
from robot.joint_values import JointValues
from robot.joints import GRIPPER, JOINT_NAMES, Role, Side, arm_name
from robot.virtual.precalibrated import factory_calibration


def dry_calibrations(rig: RigConfig) -> dict[Side, ArmCalibration]:
    """The followers' calibration for dry arms: the rig's files, else the virtual rig's own.

    Raises:
        CalibrationError: a real rig without calibration files.
    """
    root = calibration_root(rig.calibration.dir)
    found: dict[Side, ArmCalibration] = {}
    for side in Side:
        path = calibration_path(root, rig.id, side, Role.FOLLOWER)
        if path.is_file():
            found[side] = load_calibration(path)
        elif rig.virtual is not None:
            values = factory_calibration(rig.virtual, arm_name(side, Role.FOLLOWER))
            found[side] = arm_calibration(values)
        else:
            raise CalibrationError(
                f"dry arms need the calibration of rig {rig.id!r}'s followers to know their limits; there is no"
                f" file at {path}. Next: run so101-calibrate, or copy the calibration files from the rig's computer"
            )
    return found


def start_pose(data: np.ndarray | None, actions: np.ndarray) -> JointValues:
    """Where dry arms stand at an episode's start: its first recorded state (else its first action).

    A joint the recording lacks stands mid-range (the gripper half open).
    """
    first = actions[0] if data is None else np.where(np.isnan(data[0]), actions[0], data[0])
    middle = JointValues(np.array([[50.0 if j == GRIPPER else 0.0 for j in JOINT_NAMES]] * len(Side)))
    return JointValues.from_vector(first).fill_missing(middle)
