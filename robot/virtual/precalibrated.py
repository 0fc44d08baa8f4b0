"""A virtual rig that was calibrated "last week": motors and LeRobot files already agree.

Calibrating four arms through LeRobot's procedure takes ~30 s on the virtual rig; tests, the demo
and benchmarks that are not about calibration start from this state instead. The values are the
ones the procedure would record (the arm profiles' homing offsets and mechanical stops), and the
files use LeRobot's JSON format, so LeRobot's own classes accept them unchanged.
"""

import json
from pathlib import Path
from typing import TYPE_CHECKING

from robot.feetech.sts3215 import REGISTERS, encode_sign_magnitude
from robot.joints import FULL_TURN_JOINT, JOINT_NAMES, MOTOR_IDS, Role, Side

if TYPE_CHECKING:
    from robot.virtual.rig_model import VirtualRigModel


def _role(arm: str) -> Role:
    return Role.LEADER if arm.endswith(Role.LEADER) else Role.FOLLOWER


def calibration_values(model: "VirtualRigModel", arm: str) -> dict[str, dict[str, int]]:
    """LeRobot's calibration of one virtual arm, joint -> {id, drive_mode, homing_offset, range_min, range_max}."""
    values = {}
    for joint in JOINT_NAMES:
        profile = model.arms[arm].profiles[joint]
        low, high = (0, 4095) if joint == FULL_TURN_JOINT else (profile.range_min, profile.range_max)
        values[joint] = {
            "id": MOTOR_IDS[joint],
            "drive_mode": 0,
            "homing_offset": profile.homing_offset,
            "range_min": low,
            "range_max": high,
        }
    return values


def write_motor_calibration(model: "VirtualRigModel") -> None:
    """Put every arm's calibration into its motors' EEPROM flash (as if written with Lock 0)."""
    for arm, bus in model.buses.items():
        values = calibration_values(model, arm)
        for joint, motor in zip(JOINT_NAMES, bus.motors, strict=True):
            flash = bytearray(motor.flash)
            for name, key in (
                ("Homing_Offset", "homing_offset"),
                ("Min_Position_Limit", "range_min"),
                ("Max_Position_Limit", "range_max"),
            ):
                register = REGISTERS[name]
                raw = values[joint][key]
                if register.sign_bit is not None:
                    raw = encode_sign_magnitude(raw, register.sign_bit)
                flash[register.address : register.address + register.size] = raw.to_bytes(register.size, "little")
            # LeRobot's configure() ran at some earlier connect too: no 500 µs return delay.
            flash[REGISTERS["Return_Delay_Time"].address] = 0
            motor.load_flash(bytes(flash))


def calibration_file(root: Path, rig_id: str, arm: str) -> Path:
    """Where LeRobot (and so101-calibrate) keep this arm's file under `root`."""
    side = Side(arm.split("_")[0])
    role = _role(arm)
    folder = root / "robots" / "so_follower" if role is Role.FOLLOWER else root / "teleoperators" / "so_leader"
    return folder / f"{rig_id}_{side}.json"


def write_calibration_files(
    model: "VirtualRigModel", root: Path, rig_id: str, *, overwrite: bool = False
) -> list[Path]:
    """Write LeRobot calibration files for the four arms under `root`; returns the paths written."""
    written = []
    for arm in model.buses:
        path = calibration_file(root, rig_id, arm)
        if path.exists() and not overwrite:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(calibration_values(model, arm), indent=4))
        written.append(path)
    return written
