"""Virtual SO-101 arms: six motors on mechanics shaped by each joint's calibration profile.

The profiles (what a real arm's calibration records, with a seeded variation per arm) are in
`robot.virtual.profiles`; here they become mechanical stops and rest poses for the emulated motors.
"""

from robot.joints import JOINT_NAMES, MOTOR_IDS, Role
from robot.virtual.config import ServoDynamics
from robot.virtual.motor import Motor
from robot.virtual.physics import JointModel, JointPhysics
from robot.virtual.profiles import JointProfile
from robot.virtual.servo_dynamics import ArmGravity, ServoJointPhysics
from robot.virtual.servo_params import GRAVITY_JOINTS, ServoParams, load_fitted

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


def middle_actual(profile: JointProfile) -> float:
    """The actual position at the middle of the calibrated range: LeRobot's 0 degrees, steps."""
    return profile.homing_offset + (profile.range_min + profile.range_max) / 2


def fitted_physics(models: dict[str, JointModel], middles: dict[str, float], params: ServoParams) -> list[JointPhysics]:
    """One arm's joints under the fitted servo model, in `JOINT_NAMES` order, sharing one gravity model."""
    gravity = ArmGravity(params, [middles[name] for name in GRAVITY_JOINTS])
    joints = [
        ServoJointPhysics(
            models[name],
            params,
            name,
            (gravity, GRAVITY_JOINTS.index(name)) if name in GRAVITY_JOINTS else None,
        )
        for name in JOINT_NAMES
    ]
    gravity.attach([joints[JOINT_NAMES.index(name)] for name in GRAVITY_JOINTS])
    return joints


def build_motors(
    profiles: dict[str, JointProfile],
    role: Role,
    t0_s: float,
    supply_v: float | None = None,
    dynamics: ServoDynamics = ServoDynamics.IDEAL,
    params: ServoParams | None = None,
) -> list[Motor]:
    """Six factory-fresh motors (IDs 1..6, uncalibrated) on one arm's mechanics, fed `supply_v` (default the role's).

    `dynamics` fitted puts a follower's joints under the fitted servo model (`params`, default the
    committed fit, at the motors' supply: a lower one makes them weaker and slower); leaders, moved
    by hand with torque off, always use the ideal one.
    """
    volts = SUPPLY_V[role] if supply_v is None else supply_v
    models = {name: joint_model(profiles[name]) for name in JOINT_NAMES}
    if dynamics is ServoDynamics.FITTED and role is Role.FOLLOWER:
        middles = {name: middle_actual(profiles[name]) for name in JOINT_NAMES}
        physics = fitted_physics(models, middles, (params or load_fitted()).at_supply(volts))
    else:
        physics = [JointPhysics(models[name]) for name in JOINT_NAMES]
    return [
        Motor(MOTOR_IDS[name], models[name], supply_v=volts, t0_s=t0_s, physics=joint)
        for name, joint in zip(JOINT_NAMES, physics, strict=True)
    ]
