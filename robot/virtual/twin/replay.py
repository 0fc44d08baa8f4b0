"""Recorded goals through the emulated follower, at the recording's rate, in LeRobot's record-loop order.

Each frame: read the state, then write that frame's goal (as LeRobot's record loop does). Two replays:
- `replay_arm`: the whole emulated follower (six `Motor`s, their registers set as LeRobot's
  `configure()` leaves them, coupled gravity): the honest check, used for validation and the plot;
- `simulate_joint`: one joint's mechanics alone, gravity from the *recorded* angles of the others:
  cheap enough to be the fit's inner loop.
Both close the gripper on what the recording shows it held (`held_object`): a real gripper that
stopped short of a goal it was still being asked to close toward was holding something, and the
emulated one meets the same object there.
"""

import types

import numpy as np

from robot.feetech.sts3215 import REGISTERS
from robot.joints import GRIPPER, JOINT_NAMES, Role
from robot.virtual.arms import build_motors
from robot.virtual.config import ServoDynamics
from robot.virtual.motor import Motor
from robot.virtual.physics import Drive, JointModel
from robot.virtual.profiles import JointProfile
from robot.virtual.servo_dynamics import ArmGravity, ServoJointPhysics
from robot.virtual.servo_params import GRAVITY_JOINTS, LEROBOT_ACCELERATION, LEROBOT_GAINS, LEROBOT_GRIPPER, ServoParams
from robot.virtual.twin.recording import DEG_PER_STEP

# What LeRobot 0.6.1's SOFollower.configure() writes (so_follower.py, feetech.py configure_motors).
LEROBOT_CONFIGURE = {
    "Return_Delay_Time": 0,
    "Maximum_Acceleration": LEROBOT_ACCELERATION,
    "Acceleration": LEROBOT_ACCELERATION,
    "Operating_Mode": 0,
}
HOLD_GAP_DEG = 4.0  # the gripper's goal this far past its state (closing) while the state stands still: holding
HOLD_STILL_DEG = 0.5  # the state moving less than this a frame counts as standing still
HOLD_FRAMES = 10  # a hold lasts at least this many frames (shorter: the jaw was only slow)


def to_steps(degrees: np.ndarray | float, joint: str, ranges: dict[str, tuple[int, int]]) -> np.ndarray | float:
    """Degrees (as `recording` gives them) to actual steps of a motor with no homing offset."""
    low, high = ranges[joint]
    origin = low if joint == GRIPPER else (low + high) / 2
    return origin + np.asarray(degrees) / DEG_PER_STEP


def to_degrees(steps: np.ndarray | float, joint: str, ranges: dict[str, tuple[int, int]]) -> np.ndarray | float:
    """Inverse of `to_steps`."""
    low, high = ranges[joint]
    origin = low if joint == GRIPPER else (low + high) / 2
    return (np.asarray(steps) - origin) * DEG_PER_STEP


def held_object(state_deg: np.ndarray, action_deg: np.ndarray) -> np.ndarray:
    """Per frame, where the gripper met an object (degrees), NaN where it held nothing.

    A hold: the goal at least HOLD_GAP_DEG more closed than the state while the state stands still,
    for HOLD_FRAMES frames or more. The object is where the jaw stopped; it is there from the frames
    before the stop in which the jaw was still above it (closing onto it).
    """
    i = JOINT_NAMES.index(GRIPPER)
    state, goal = state_deg[:, i], action_deg[:, i]
    still = np.abs(np.diff(state, prepend=state[0])) < HOLD_STILL_DEG
    holding = still & (goal < state - HOLD_GAP_DEG)
    contact = np.full(len(state), np.nan)
    t = 0
    while t < len(state):
        if not holding[t]:
            t += 1
            continue
        end = t
        while end < len(state) and holding[end]:
            end += 1
        if end - t >= HOLD_FRAMES:
            where = float(np.max(state[t:end]))
            start = t
            closing = goal < state - HOLD_STILL_DEG
            while start > 0 and closing[start - 1] and state[start - 1] >= where - HOLD_STILL_DEG:
                start -= 1
            contact[start:end] = where
        t = end
    return contact


def _profiles(ranges: dict[str, tuple[int, int]]) -> dict[str, JointProfile]:
    return {j: JointProfile(0, low, high, 0.5) for j, (low, high) in ranges.items()}


def _write(motor: Motor, name: str, value: int, t_s: float) -> None:
    register = REGISTERS[name]
    motor.write(register.address, register.encode(value).to_bytes(register.size, "little"), t_s)


def replay_arm(
    actions_deg: np.ndarray,
    start_deg: np.ndarray,
    ranges: dict[str, tuple[int, int]],
    params: ServoParams,
    fps: float,
    held_deg: np.ndarray | None = None,
) -> np.ndarray:
    """The emulated follower's Present_Position (degrees) at each frame, before that frame's goal is written.

    `params`: the arm's table at its supply (`ServoParams.at_supply`). It starts at `start_deg`;
    `held_deg` (per frame, as `held_object` gives it) puts an object in the gripper's way.
    """
    # `params` are the arm's at its supply already: motors fed that supply keep them as they are.
    supply_v = params.rated_supply_v
    motors = build_motors(_profiles(ranges), Role.FOLLOWER, 0.0, supply_v, ServoDynamics.FITTED, params)
    for motor, joint in zip(motors, JOINT_NAMES, strict=True):
        settings = LEROBOT_CONFIGURE | LEROBOT_GAINS | (LEROBOT_GRIPPER if joint == GRIPPER else {})
        for name, value in settings.items():
            _write(motor, name, value, 0.0)
        x = float(to_steps(start_deg[JOINT_NAMES.index(joint)], joint, ranges))
        joint_physics = motor.joint
        assert isinstance(joint_physics, ServoJointPhysics)  # build_motors gives a follower the fitted model
        joint_physics.position = joint_physics.gear_position = x
        _write(motor, "Torque_Enable", 1, 0.0)
    nothing = np.full(len(actions_deg), np.nan)
    contact = to_steps(nothing if held_deg is None else held_deg, GRIPPER, ranges)
    gripper = motors[JOINT_NAMES.index(GRIPPER)].joint
    present = REGISTERS["Present_Position"].address
    states = np.empty_like(actions_deg)
    for t, action in enumerate(actions_deg):
        t_s = t / fps
        gripper.object_contact = None if np.isnan(contact[t]) else float(contact[t])
        for i, (motor, joint) in enumerate(zip(motors, JOINT_NAMES, strict=True)):
            steps = int.from_bytes(motor.read(present, 2, t_s), "little")
            states[t, i] = to_degrees(steps, joint, ranges)
            goal = round(float(np.clip(to_steps(action[i], joint, ranges), 0, 4095)))
            _write(motor, "Goal_Position", goal, t_s)
    return states


def simulate_joint(
    joint: str,
    state_deg: np.ndarray,
    action_deg: np.ndarray,
    ranges: dict[str, tuple[int, int]],
    params: ServoParams,
    fps: float,
) -> np.ndarray:
    """One joint's emulated state (degrees) under the recorded goals; other joints as recorded."""
    index = JOINT_NAMES.index(joint)
    low, high = ranges[joint]
    start = float(to_steps(state_deg[0, index], joint, ranges))
    model = JointModel(float(low), float(high), start)
    others = [types.SimpleNamespace(position=0.0) for _ in GRAVITY_JOINTS]
    gravity = None
    if joint in GRAVITY_JOINTS:
        gravity = ArmGravity(params, [(ranges[j][0] + ranges[j][1]) / 2 for j in GRAVITY_JOINTS])
    own = (gravity, GRAVITY_JOINTS.index(joint)) if gravity else None
    physics = ServoJointPhysics(model, params, joint, own)
    if gravity:
        gravity.attach([physics if j == joint else others[k] for k, j in enumerate(GRAVITY_JOINTS)])  # type: ignore[misc]
    limit = LEROBOT_GRIPPER["Max_Torque_Limit"] if joint == GRIPPER else 1000
    accel = LEROBOT_CONFIGURE["Acceleration"] * params.accel_unit_steps_s2
    p_scale, d_scale = LEROBOT_GAINS["P_Coefficient"] / 32, LEROBOT_GAINS["D_Coefficient"] / 32
    drive = Drive(True, start, limit, 0.0, accel, p_scale, None, d_scale, accel)
    contact = to_steps(held_object(state_deg, action_deg), GRIPPER, ranges) if joint == GRIPPER else None
    dt = 1.0 / fps
    out = np.empty(len(action_deg))
    gravity_columns = [JOINT_NAMES.index(j) for j in GRAVITY_JOINTS]
    for t in range(len(action_deg)):
        out[t] = round(physics.position)
        for k, column in enumerate(gravity_columns):
            if gravity and JOINT_NAMES[column] != joint:
                others[k].position = float(to_steps(state_deg[t, column], JOINT_NAMES[column], ranges))
        if contact is not None:
            physics.object_contact = None if np.isnan(contact[t]) else float(contact[t])
        drive.goal_actual = float(np.clip(round(float(to_steps(action_deg[t, index], joint, ranges))), 0, 4095))
        physics.advance(dt, drive)
    return to_degrees(out, joint, ranges)
