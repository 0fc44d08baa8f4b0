"""The servo model's free rows fitted to one arm's recording: per arm, then per joint where the data allows.

Two stages, each Nelder-Mead on the recorded states (`replay.simulate_joint`, one joint at a time,
the others' recorded angles giving gravity):
1. the arm: the position loop's gain (`p_duty_per_step`), the bus and firmware latency, and the
   supply voltage the arm ran on (stall torque and speed scale with it), over every joint it moved;
2. each joint the recording moves enough (`recording.MIN_MOTION_DEG`): its own gain against the
   arm's (`p_scale`) and damping (`d_duty_s_per_step`), and for the gripper, if the recording shows
   it holding something (`replay.held_object`), how stiffly the object pushes back.
Cost: per joint, the mean squared emulated-minus-real state over the real arm's mean squared
one-frame tracking error (so each joint counts alike), plus the squared logarithm of the ratio of
the two arms' mean tracking errors. The first alone fits a real elbow's path with a smoother one that
tracks 20-30 % better than the real arm does (SamueleSandrini's elbow: 0.70 of its error held out);
the second asks the emulated arm to be as far off its goals as the real one (0.81).

Left as they are: backlash (recordings barely constrain it: with it free, a fit took it to 9 steps,
past the datasheet's 0.5 degrees, for a 2 % lower cost), and the loop's integral term: LeRobot writes
I_Coefficient 0 to every follower, so no recording made through LeRobot can show one.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import minimize

from robot.joints import GRIPPER, JOINT_NAMES
from robot.virtual.servo_params import ServoParams
from robot.virtual.twin.recording import ArmRecording
from robot.virtual.twin.replay import held_object, simulate_joint

SUPPLY_V_BOUNDS = (4.0, 14.0)  # a follower's supply, V: from a weak 5 V brick under load to a 12 V adapter's top
LATENCY_S_BOUNDS = (0.0, 0.25)
P_SCALE_BOUNDS = (0.2, 5.0)
# Latency in the search vector is in units of 1/LATENCY_SCALE s: the first simplex then tries 20 ms
# steps, as it tries 1.5x on the gains (logarithms); with 4 ms steps a sluggish arm was fitted with a
# weak loop instead of its latency.
LATENCY_SCALE = 20.0


@dataclass(frozen=True)
class TwinFit:
    """One arm's fitted table, its supply, and how well it reproduces the fitting episodes."""

    params: ServoParams  # at the rated supply; `params.at_supply(supply_v)` is the arm
    supply_v: float
    joints: tuple[str, ...]  # joints whose own rows were fitted
    cost_before: float
    cost_after: float
    evaluations: int

    @property
    def arm_params(self) -> ServoParams:
        """The table as the arm runs it, at its fitted supply."""
        return self.params.at_supply(self.supply_v)


Progress = Callable[[str, int, float], None]  # (stage, evaluation, cost)


def _clip(value: float, bounds: tuple[float, float]) -> float:
    return min(bounds[1], max(bounds[0], value))


def _scale(recording: ArmRecording, joint: str) -> float:
    i = JOINT_NAMES.index(joint)
    errors = np.concatenate([s[1:, i] - a[:-1, i] for s, a in recording.trajectories])
    return max(1e-3, float(np.mean(errors**2)))


def _joint_cost(recording: ArmRecording, joint: str, params: ServoParams) -> float:
    i = JOINT_NAMES.index(joint)
    squared, emulated_error, real_error = [], [], []
    for s, a in recording.trajectories:
        emulated = simulate_joint(joint, s, a, recording.ranges_steps, params, recording.fps)
        squared.append((emulated - s[:, i]) ** 2)
        emulated_error.append(np.abs(emulated[1:] - a[:-1, i]))
        real_error.append(np.abs(s[1:, i] - a[:-1, i]))
    mismatch = float(np.mean(np.concatenate(squared))) / _scale(recording, joint)
    ratio = float(np.mean(np.concatenate(emulated_error))) / max(1e-6, float(np.mean(np.concatenate(real_error))))
    return mismatch + math.log(max(ratio, 1e-6)) ** 2


def _minimize(cost: Callable[[np.ndarray], float], x0: np.ndarray, evaluations: int) -> np.ndarray:
    simplex = np.array([x0] + [x0 + np.eye(len(x0))[k] * 0.4 for k in range(len(x0))])
    options = {"maxfev": evaluations, "initial_simplex": simplex, "xatol": 1e-3, "fatol": 1e-4}
    return minimize(cost, x0, method="Nelder-Mead", options=options).x


def fit_arm(
    recording: ArmRecording,
    start: ServoParams,
    start_supply_v: float,
    evaluations: int = 240,
    progress: Progress | None = None,
) -> TwinFit:
    """Fit one arm's table to `recording`, from `start` (at the rated supply) on `start_supply_v`.

    `evaluations`: the arm stage's budget; each joint's stage gets a third of it.
    """
    joints = tuple(j for j in JOINT_NAMES if j not in recording.skipped)
    calls = [0]

    def total(params: ServoParams, supply_v: float, stage: str) -> float:
        at = params.at_supply(supply_v)
        value = sum(_joint_cost(recording, joint, at) for joint in joints)
        calls[0] += 1
        if progress:
            progress(stage, calls[0], value)
        return value

    def arm(vector: np.ndarray) -> tuple[ServoParams, float]:
        p = math.exp(float(vector[0]))
        latency = _clip(float(vector[1]) / LATENCY_SCALE, LATENCY_S_BOUNDS)
        supply = _clip(start_supply_v * math.exp(float(vector[2])), SUPPLY_V_BOUNDS)
        return replace(start, p_duty_per_step=p, latency_s=latency), supply

    before = total(start, start_supply_v, "arm")
    x0 = np.array([math.log(start.p_duty_per_step), start.latency_s * LATENCY_SCALE, 0.0])
    params, supply_v = arm(_minimize(lambda v: total(*arm(v), "arm"), x0, evaluations))
    for joint in joints:
        params = _fit_joint(recording, joint, params, supply_v, max(12, evaluations // 3), calls, progress)
    after = total(params, supply_v, "done")
    return TwinFit(params, supply_v, joints, before, after, calls[0])


def _fit_joint(
    recording: ArmRecording,
    joint: str,
    params: ServoParams,
    supply_v: float,
    evaluations: int,
    calls: list[int],
    progress: Progress | None,
) -> ServoParams:
    """`params` with `joint`'s own gain and damping (and a held object's stiffness) fitted."""
    i = JOINT_NAMES.index(joint)
    holds = joint == GRIPPER and any(np.isfinite(held_object(s, a)).any() for s, a in recording.trajectories)

    def unpack(vector: np.ndarray) -> ServoParams:
        p_scale = list(params.p_scale)
        d_duty = list(params.d_duty_s_per_step)
        p_scale[i] = _clip(math.exp(float(vector[0])), P_SCALE_BOUNDS)
        d_duty[i] = math.exp(float(vector[1]))
        changed = replace(params, p_scale=tuple(p_scale), d_duty_s_per_step=tuple(d_duty))
        if holds:
            changed = replace(changed, object_stiffness_per_step=math.exp(float(vector[2])))
        return changed

    def cost(vector: np.ndarray) -> float:
        value = _joint_cost(recording, joint, unpack(vector).at_supply(supply_v))
        calls[0] += 1
        if progress:
            progress(joint, calls[0], value)
        return value

    x0 = [math.log(params.p_scale[i]), math.log(params.d_duty_s_per_step[i])]
    if holds:
        x0.append(math.log(params.object_stiffness_per_step))
    return unpack(_minimize(cost, np.array(x0), evaluations))
