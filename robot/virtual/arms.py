"""Virtual SO-101 arms: six motors on mechanics shaped by each joint's calibration profile.

The profiles (what a real arm's calibration records, with a seeded variation per arm) are in
`robot.virtual.profiles`; here they become mechanical stops and rest poses for the emulated motors.
"""

from robot.joints import JOINT_NAMES, MOTOR_IDS, Role
from robot.virtual.motor import Motor
from robot.virtual.physics import JointModel
from robot.virtual.profiles import JointProfile

SUPPLY_V = {Role.FOLLOWER: 12.0, Role.LEADER: 5.0}  # each role's supply unless the rig says (`follower_supply_v`)


def joint_model(profile: JointProfile) -> JointModel:
    """Mechanical stops and rest pose, in actual steps, from a calibration-style profile."""
    low = profile.homing_offset + profile.range_min
    high = profile.homing_offset + profile.range_max
    return JointModel(
        stop_min=float(low),
        stop_max=float(high),
        rest=low + profile.rest_fraction * (high - low),
        holding_load_permille=profile.holding_load_permille,
    )


def build_motors(
    profiles: dict[str, JointProfile], role: Role, t0_s: float, supply_v: float | None = None
) -> list[Motor]:
    """Six factory-fresh motors (IDs 1..6, uncalibrated) on one arm's mechanics, fed `supply_v` (default the role's)."""
    volts = SUPPLY_V[role] if supply_v is None else supply_v
    return [Motor(MOTOR_IDS[name], joint_model(profiles[name]), supply_v=volts, t0_s=t0_s) for name in JOINT_NAMES]
