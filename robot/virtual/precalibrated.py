"""A virtual rig that was calibrated "last week": motors and LeRobot files already agree.

Calibrating four arms through LeRobot's procedure takes ~30 s on the virtual rig; tests, the demo
and benchmarks that are not about calibration start from this state instead. The values are the
ones the procedure would record (the arm profiles' homing offsets and mechanical stops), and the
files use LeRobot's JSON format, so LeRobot's own classes accept them unchanged.

Light: it needs the arms' profiles, not the emulator, so a dry run can know a virtual rig's
calibration without starting one (the emulator's model writes the same values into its motors).
"""

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from robot.joints import FULL_TURN_JOINT, JOINT_NAMES, MOTOR_IDS, Role, Side
from robot.virtual.config import VirtualRigConfig
from robot.virtual.profiles import JointProfile, arm_profiles


class ProfiledArm(Protocol):
    """One virtual arm as the calibration sees it."""

    @property
    def profiles(self) -> Mapping[str, JointProfile]:
        """Joint name -> its calibration profile."""
        ...


class ProfiledRig(Protocol):
    """What the calibration needs of a virtual rig (a `VirtualRigModel` is one): its arms' profiles."""

    @property
    def arms(self) -> Mapping[str, ProfiledArm]:
        """Arm name (e.g. "left_follower") -> the arm."""
        ...


def _role(arm: str) -> Role:
    return Role.LEADER if arm.endswith(Role.LEADER) else Role.FOLLOWER


def _values(profiles: Mapping[str, JointProfile]) -> dict[str, dict[str, int]]:
    values = {}
    for joint in JOINT_NAMES:
        profile = profiles[joint]
        low, high = (0, 4095) if joint == FULL_TURN_JOINT else (profile.range_min, profile.range_max)
        values[joint] = {
            "id": MOTOR_IDS[joint],
            "drive_mode": 0,
            "homing_offset": profile.homing_offset,
            "range_min": low,
            "range_max": high,
        }
    return values


def calibration_values(model: ProfiledRig, arm: str) -> dict[str, dict[str, int]]:
    """LeRobot's calibration of one virtual arm, joint -> {id, drive_mode, homing_offset, range_min, range_max}."""
    return _values(model.arms[arm].profiles)


def factory_calibration(config: VirtualRigConfig, arm: str) -> dict[str, dict[str, int]]:
    """`calibration_values` of the arm a virtual rig with `config` builds, without building the rig."""
    return _values(arm_profiles(arm, _role(arm), config.seed))


def calibration_file(root: Path, rig_id: str, arm: str) -> Path:
    """Where LeRobot (and so101-calibrate) keep this arm's file under `root`."""
    side = Side(arm.split("_")[0])
    role = _role(arm)
    folder = root / "robots" / "so_follower" if role is Role.FOLLOWER else root / "teleoperators" / "so_leader"
    return folder / f"{rig_id}_{side}.json"


def write_calibration_files(model: ProfiledRig, root: Path, rig_id: str, *, overwrite: bool = False) -> list[Path]:
    """Write LeRobot calibration files for the four arms under `root`; returns the paths written."""
    written = []
    for arm in model.arms:
        path = calibration_file(root, rig_id, arm)
        if path.exists() and not overwrite:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(calibration_values(model, arm), indent=4))
        written.append(path)
    return written
