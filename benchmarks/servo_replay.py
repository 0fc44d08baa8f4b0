"""Replay recorded actions through the emulated follower, fit the servo model, and measure fidelity.

Two replays, both at the recording's frame rate and in LeRobot's record-loop order (read the
state, then write that frame's goal):
- `replay_arm`: the whole emulated follower (six `Motor`s, their registers configured as LeRobot's
  `configure()` does, coupled gravity): the honest check, used for validation and the plot;
- `simulate_joint`: one joint's mechanics alone, gravity from the *recorded* angles of the others:
  cheap enough to be the fit's inner loop.
"""

import math
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import minimize

from benchmarks.servo_recordings import DEG_PER_STEP, Recording
from robot.feetech.sts3215 import REGISTERS
from robot.joints import GRIPPER, JOINT_NAMES, Role
from robot.virtual.arms import build_motors
from robot.virtual.config import ServoDynamics
from robot.virtual.physics import Drive, JointModel
from robot.virtual.profiles import JointProfile
from robot.virtual.servo_dynamics import ArmGravity, ServoJointPhysics
from robot.virtual.servo_params import (
    GRAVITY_JOINTS,
    LEROBOT_ACCELERATION,
    LEROBOT_GAINS,
    LEROBOT_GRIPPER,
    ServoParams,
)

# What LeRobot 0.6.1's SOFollower.configure() writes (so_follower.py, feetech.py configure_motors).
LEROBOT_CONFIGURE = {
    "Return_Delay_Time": 0,
    "Maximum_Acceleration": LEROBOT_ACCELERATION,
    "Acceleration": LEROBOT_ACCELERATION,
    "Operating_Mode": 0,
}
LAG_FRAMES_MAX = 10
STILL_FRAMES = 10  # the goal held within STILL_DEG for this many frames counts as holding still
STILL_DEG = 0.5


def to_steps(degrees: np.ndarray | float, joint: str, ranges: dict[str, tuple[int, int]]) -> np.ndarray | float:
    """Degrees (as `servo_recordings` gives them) to actual steps of a motor with no homing offset."""
    low, high = ranges[joint]
    origin = low if joint == GRIPPER else (low + high) / 2
    return origin + np.asarray(degrees) / DEG_PER_STEP


def to_degrees(steps: np.ndarray | float, joint: str, ranges: dict[str, tuple[int, int]]) -> np.ndarray | float:
    """Inverse of `to_steps`."""
    low, high = ranges[joint]
    origin = low if joint == GRIPPER else (low + high) / 2
    return (np.asarray(steps) - origin) * DEG_PER_STEP


def _profiles(ranges: dict[str, tuple[int, int]]) -> dict[str, JointProfile]:
    return {j: JointProfile(0, low, high, 0.5) for j, (low, high) in ranges.items()}


def _write(motor: object, name: str, value: int, t_s: float) -> None:
    register = REGISTERS[name]
    motor.write(register.address, register.encode(value).to_bytes(register.size, "little"), t_s)  # type: ignore[attr-defined]


def replay_arm(
    actions_deg: np.ndarray, start_deg: np.ndarray, ranges: dict[str, tuple[int, int]], params: ServoParams, fps: float
) -> np.ndarray:
    """The emulated follower's Present_Position (degrees) at each frame, before that frame's goal is written."""
    motors = build_motors(_profiles(ranges), Role.FOLLOWER, 0.0, dynamics=ServoDynamics.FITTED, params=params)
    for motor, joint in zip(motors, JOINT_NAMES, strict=True):
        settings = LEROBOT_CONFIGURE | LEROBOT_GAINS | (LEROBOT_GRIPPER if joint == GRIPPER else {})
        for name, value in settings.items():
            _write(motor, name, value, 0.0)
        x = float(to_steps(start_deg[JOINT_NAMES.index(joint)], joint, ranges))
        motor.joint.position = x
        motor.joint.gear_position = x  # type: ignore[attr-defined]
        _write(motor, "Torque_Enable", 1, 0.0)
    present = REGISTERS["Present_Position"].address
    states = np.empty_like(actions_deg)
    for t, action in enumerate(actions_deg):
        t_s = t / fps
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
    physics = ServoJointPhysics(model, params, params.d_duty(joint), own)
    if gravity:
        gravity.attach([physics if j == joint else others[k] for k, j in enumerate(GRAVITY_JOINTS)])  # type: ignore[misc]
    limit = LEROBOT_GRIPPER["Max_Torque_Limit"] if joint == GRIPPER else 1000
    accel = LEROBOT_CONFIGURE["Acceleration"] * params.accel_unit_steps_s2
    p_scale, d_scale = LEROBOT_GAINS["P_Coefficient"] / 32, LEROBOT_GAINS["D_Coefficient"] / 32
    drive = Drive(True, start, limit, 0.0, accel, p_scale, None, d_scale, accel)
    dt = 1.0 / fps
    out = np.empty(len(action_deg))
    gravity_columns = [JOINT_NAMES.index(j) for j in GRAVITY_JOINTS]
    for t in range(len(action_deg)):
        out[t] = round(physics.position)
        for k, column in enumerate(gravity_columns):
            if gravity and JOINT_NAMES[column] != joint:
                others[k].position = float(to_steps(state_deg[t, column], JOINT_NAMES[column], ranges))
        drive.goal_actual = float(np.clip(round(float(to_steps(action_deg[t, index], joint, ranges))), 0, 4095))
        physics.advance(dt, drive)
    return to_degrees(out, joint, ranges)


@dataclass(frozen=True)
class FitResult:
    """The fitted table and how well it reproduces the fitting data."""

    params: ServoParams
    cost_before: float
    cost_after: float
    evaluations: int


def _pack(params: ServoParams, free: Sequence[str], joints: Sequence[str]) -> np.ndarray:
    values = []
    for name in free:
        if name == "d_duty_s_per_step":
            values += [math.log(params.d_duty(j)) for j in joints]
        elif name == "p_duty_per_step":
            values.append(math.log(params.p_duty_per_step))
        else:
            values.append(getattr(params, name) * (100.0 if name == "latency_s" else 0.1))
    return np.array(values)


def _unpack(vector: np.ndarray, base: ServoParams, free: Sequence[str], joints: Sequence[str]) -> ServoParams:
    values, i = {}, 0
    for name in free:
        if name == "d_duty_s_per_step":
            d = dict(zip(JOINT_NAMES, base.d_duty_s_per_step, strict=True))
            fitted = {j: math.exp(float(vector[i + k])) for k, j in enumerate(joints)}
            mean = float(np.exp(np.mean(np.log(list(fitted.values())))))
            values[name] = tuple(fitted.get(j, mean) for j in JOINT_NAMES) if fitted else tuple(d.values())
            i += len(joints)
        elif name == "p_duty_per_step":
            values[name] = math.exp(float(vector[i]))
            i += 1
        elif name == "latency_s":
            values[name] = min(0.25, max(0.0, float(vector[i]) / 100.0))
            i += 1
        else:
            values[name] = max(0.0, float(vector[i]) / 0.1)
            i += 1
    return replace(base, **values)


def fit(
    recordings: Sequence[Recording],
    start: ServoParams,
    free: Sequence[str],
    max_evaluations: int = 300,
    progress: Callable[[int, float], None] | None = None,
) -> FitResult:
    """Fit the `free` rows of the table to `recordings` (joint by joint, Nelder-Mead on all at once).

    Cost: per joint, the mean squared emulated-minus-real state over the real arm's mean squared
    one-frame tracking error, summed over joints, so each joint counts alike.
    """
    joints = [j for j in JOINT_NAMES if not all(j in r.skipped for r in recordings)]
    scale = {}
    for joint in joints:
        i = JOINT_NAMES.index(joint)
        errs = [s[1:, i] - a[:-1, i] for r in recordings if joint not in r.skipped for s, a in r.episodes]
        scale[joint] = max(1e-3, float(np.mean(np.concatenate(errs) ** 2)))
    calls = [0]

    def cost(vector: np.ndarray) -> float:
        params = _unpack(vector, start, free, joints)
        total = 0.0
        for joint in joints:
            i = JOINT_NAMES.index(joint)
            sq = [
                (simulate_joint(joint, s, a, r.ranges_steps, params, r.fps) - s[:, i]) ** 2
                for r in recordings
                if joint not in r.skipped
                for s, a in r.episodes
            ]
            total += float(np.mean(np.concatenate(sq))) / scale[joint]
        calls[0] += 1
        if progress:
            progress(calls[0], total)
        return total

    x0 = _pack(start, free, joints)
    before = cost(x0)
    simplex = np.array([x0] + [x0 + np.eye(len(x0))[k] * 0.5 for k in range(len(x0))])
    result = minimize(
        cost,
        x0,
        method="Nelder-Mead",
        options={"maxfev": max_evaluations, "initial_simplex": simplex, "xatol": 1e-3, "fatol": 1e-4},
    )
    return FitResult(_unpack(result.x, start, free, joints), before, float(result.fun), calls[0])
