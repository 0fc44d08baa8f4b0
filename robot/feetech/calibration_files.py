"""Calibration files in LeRobot's format and layout, checked before LeRobot reads them.

Layout (the same as LeRobot's bimanual classes with HF_LEROBOT_CALIBRATION as the root):
    <root>/robots/so_follower/<rig id>_<side>.json
    <root>/teleoperators/so_leader/<rig id>_<side>.json
Format: a JSON object per joint: {"id", "drive_mode", "homing_offset", "range_min", "range_max"}.
"""

import json
from collections.abc import Mapping
from pathlib import Path

from lerobot.motors import MotorCalibration
from lerobot.utils.constants import HF_LEROBOT_CALIBRATION

from robot.errors import CalibrationError
from robot.joints import JOINT_NAMES, MOTOR_IDS, Role, Side

FIELDS = ("id", "drive_mode", "homing_offset", "range_min", "range_max")
# One arm's calibration as LeRobot's motor bus takes it: joint name -> its motor's calibration.
ArmCalibration = dict[str, MotorCalibration]


def calibration_root(configured: Path | None) -> Path:
    """The configured root, or LeRobot's default ($HF_LEROBOT_CALIBRATION)."""
    return Path(configured).expanduser() if configured else HF_LEROBOT_CALIBRATION


def arm_calibration_dir(root: Path, role: Role) -> Path:
    """Where LeRobot keeps this role's files under `root`."""
    return root / "robots" / "so_follower" if role is Role.FOLLOWER else root / "teleoperators" / "so_leader"


def calibration_path(root: Path, rig_id: str, side: Side, role: Role) -> Path:
    """The calibration file of one arm."""
    return arm_calibration_dir(root, role) / f"{rig_id}_{side}.json"


def _problem(values: dict[str, object], joint: str) -> str | None:
    missing = [f for f in FIELDS if f not in values]
    if missing:
        return f"{joint}: missing {', '.join(missing)}"
    if not all(isinstance(values[f], int) and not isinstance(values[f], bool) for f in FIELDS):
        return f"{joint}: every field must be an integer"
    low, high, offset = values["range_min"], values["range_max"], values["homing_offset"]
    if not (0 <= low < high <= 4095):  # type: ignore[operator]
        return f"{joint}: range_min={low}, range_max={high}: expected 0 <= range_min < range_max <= 4095"
    if not -2047 <= offset <= 2047:  # type: ignore[operator]
        return f"{joint}: homing_offset={offset}: expected -2047..2047 (the arm was not in the middle pose)"
    if values["id"] != MOTOR_IDS[joint]:
        return f"{joint}: id={values['id']}, expected {MOTOR_IDS[joint]}"
    return None


def arm_calibration(values: Mapping[str, Mapping[str, int]]) -> ArmCalibration:
    """An arm's calibration from checked values: joint -> {"id", "drive_mode", "homing_offset", ...}."""
    return {joint: MotorCalibration(**{f: int(values[joint][f]) for f in FIELDS}) for joint in JOINT_NAMES}


def load_calibration(path: Path) -> ArmCalibration:
    """Read and check a calibration file; raises CalibrationError that says how to fix it."""
    fix = f"fix or delete {path} and run so101-calibrate"
    if not path.is_file():
        raise CalibrationError(f"no calibration file at {path}. Next: run so101-calibrate")
    try:
        raw = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as e:
        raise CalibrationError(f"cannot read {path}: {e}. Next: {fix}") from e
    except json.JSONDecodeError as e:
        raise CalibrationError(f"{path} is not valid JSON (line {e.lineno}: {e.msg}). Next: {fix}") from e
    if not isinstance(raw, dict):
        raise CalibrationError(f"{path} must hold one JSON object per joint. Next: {fix}")
    missing = [j for j in JOINT_NAMES if j not in raw]
    if missing:
        raise CalibrationError(f"{path} has no entry for {', '.join(missing)}. Next: {fix}")
    for joint in JOINT_NAMES:
        values = raw[joint]
        problem = _problem(values, joint) if isinstance(values, dict) else f"{joint}: expected an object"
        if problem:
            raise CalibrationError(f"{path}: {problem}. Next: {fix}")
    return arm_calibration(raw)
