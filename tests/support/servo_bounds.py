"""Tolerances for tests that watch the virtual followers move, derived from the fitted servo table.

The virtual rig's followers run the fitted STS3215 model (`virtual.dynamics: fitted`): they trail a
moving goal by the firmware latency plus the loop's time constant, rest short of a goal by the
loop's give under gravity plus half the gearbox play, and take a few time constants to settle. A
test that once assumed an ideal servo (the state one tick after a goal is that goal) takes its
slack from here, so a refit of `robot/virtual/servo_fitted.json` moves the tolerances with it.

    from tests.support.servo_bounds import tracking_bound_deg
    bound = tracking_bound_deg("left_elbow_flex.pos", fps, largest_one_tick_move_deg)
"""

import math
from typing import TYPE_CHECKING

from robot.joints import GRIPPER, JOINT_NAMES
from robot.virtual.servo_params import (
    LEROBOT_ACCELERATION,
    LEROBOT_GRIPPER,
    STEPS_PER_REV,
    ServoParams,
    load_fitted,
)

if TYPE_CHECKING:
    import numpy as np

PARAMS: ServoParams = load_fitted()  # the virtual rig's followers (12 V: `virtual.follower_supply_v`)
DEG_PER_STEP = 360.0 / STEPS_PER_REV


def joint_of(key: str) -> str:
    """`left_elbow_flex.pos` -> `elbow_flex` (a bare joint name passes through)."""
    name = key.removesuffix(".pos")
    return next((joint for joint in JOINT_NAMES if name == joint or name.endswith(f"_{joint}")), name)


def lag_ticks(key: str, fps: float) -> float:
    """How many control ticks the joint trails a steadily moving goal by (latency + time constant)."""
    return PARAMS.tracking_lag_s(joint_of(key)) * fps


def settle_ticks(key: str, fps: float, step_steps: float, within_steps: float) -> int:
    """Ticks from writing a goal `step_steps` away until the joint is within `within_steps` of rest."""
    return math.ceil(move_s(key, step_steps, within_steps) * fps)


def move_s(key: str, distance_steps: float, within_steps: float) -> float:
    """Seconds from writing a goal `distance_steps` away until the joint is within `within_steps` of
    rest, at the torque limit LeRobot leaves it (the gripper's is half: it moves at half speed)."""
    joint = joint_of(key)
    limit = LEROBOT_GRIPPER["Max_Torque_Limit"] / 1000 if joint == GRIPPER else 1.0
    return PARAMS.move_s(joint, distance_steps, within_steps, limit)


def offset_steps(key: str) -> float:
    """How far from its goal the joint may rest, encoder steps: gravity's worst pull on it through the
    loop's give and the gearbox play, or the play alone for a joint gravity does not load."""
    joint = joint_of(key)
    loaded = PARAMS.holding_offset_steps(PARAMS.worst_gravity_fraction(joint))
    return max(loaded, PARAMS.backlash_steps / 2.0)


def offset_deg(key: str) -> float:
    """`offset_steps` in degrees (a body joint's unit; the gripper's percent needs its range)."""
    return offset_steps(key) * DEG_PER_STEP


def tracking_bound_deg(key: str, fps: float, max_step_deg: float) -> float:
    """The most a follower may be off the goal it was sent one tick earlier, degrees.

    It trails a goal moving `max_step_deg` a tick by its lag, one tick of which the comparison with
    the previous tick's goal already absorbs; one more tick of motion allows for a busy host handing
    the emulator a goal late. Plus where a still goal leaves it (`offset_deg`).
    """
    return lag_ticks(key, fps) * max_step_deg + offset_deg(key)


def chase_lag(key: str, fps: float, goals: "np.ndarray", step: float, extra_delay_s: float = 0.0) -> "np.ndarray":
    """How far the joint is off each goal one tick after it was sent, as a servo limited by its speed chases them.

    The linear bound above (`lag_ticks` of the largest one-tick move) holds while the loop is below
    its torque limit. A goal moving faster than the joint can (a gripper closing at LeRobot's half
    torque turns at most 1,536 steps/s, under 4 % of its range a tick) drives it into saturation, and
    its lag then grows with each tick the goal outruns it. So the goals are chased here as the table
    says a joint moves: each acts `latency_s` (+ `extra_delay_s`: a busy host handing it over late)
    after it was sent; the joint's speed heads for the loop's (error / time constant), capped at the
    speed the torque limit allows and changed at most at the Acceleration register's rate.

    `goals`: one per tick, in the joint's units; `step`: one encoder step in those units. Returns, per
    goal k but the last, |position one tick after goal k was sent - goal k|, in those units.
    """
    import numpy as np

    joint = joint_of(key)
    limit = LEROBOT_GRIPPER["Max_Torque_Limit"] / 1000 if joint == GRIPPER else 1.0
    speed_max = PARAMS.no_load_speed_steps_s * limit * step
    accel = LEROBOT_ACCELERATION * PARAMS.accel_unit_steps_s2 * step
    tau = PARAMS.time_constant_s(joint)
    substeps = 40
    dt = 1.0 / fps / substeps
    delay = round((PARAMS.latency_s + extra_delay_s) / dt)  # substeps from a goal's sending to its acting
    acting = np.repeat(np.asarray(goals, dtype=float), substeps)
    acting = np.concatenate([np.full(delay, acting[0]), acting])[: len(acting)]
    position, speed = float(goals[0]), 0.0
    positions = np.empty(len(acting))
    for i, goal in enumerate(acting):
        wanted = max(-speed_max, min(speed_max, (goal - position) / tau))
        speed += max(-accel * dt, min(accel * dt, wanted - speed))
        position += speed * dt
        positions[i] = position
    one_tick_later = positions[substeps - 1 :: substeps][: len(goals) - 1]  # at tick k + 1, for goal k
    return np.abs(one_tick_later - np.asarray(goals[:-1], dtype=float))
