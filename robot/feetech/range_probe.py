"""A short, slow reach probe: each joint of a follower moved a little toward both ends of its range, and back.

Run at connect when a calibration file has just been written to a follower's motors
(robot/feetech/calibration_fit.py): a joint whose mechanical stop lies inside the file's range stops
short of where it is sent. A slumped arm rests against its stops (gravity puts shoulder_lift and
elbow_flex there), so a stop that another arm's file moved into the range is usually near where the
joint starts. Goals change by at most `max_step_deg` a tick (1 degree at 30 Hz: the safety layer's
ramp speed), never more than `distance_deg` from the start, and the joints end where they started,
with their torque as it was.

    legs: start + distance (or short of the range's upper end), start - distance (or of its lower end), start
    each tick: read the present positions (raw steps, the file's frame)
        -> a joint `stall_lag_deg` behind its goal is blocked: from then on its goal steps back to it
        -> the other goals step toward the leg's target -> one sync write of the goals
"""

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from lerobot.motors.feetech import FeetechMotorsBus

from robot.config_checks import reject_non_finite

STEPS_PER_DEG = 4096 / 360  # an STS3215's encoder: 4096 steps a turn


@dataclass(frozen=True)
class ProbeConfig:
    """How far and how fast the probe moves a joint."""

    # How far a joint is sent toward each end of its range (less where that end is nearer), degrees:
    # past the stop a slumped joint rests near, short of the table and the other arm.
    distance_deg: float = 15.0
    # Largest change of a joint's goal from one tick to the next, degrees.
    max_step_deg: float = 1.0
    # One tick of the probe's own slow move, s: it runs at connect, before any loop, so it keeps its own
    # pace (1 degree a tick at 30 ticks a second is the engage ramp's 30 deg/s) whatever the rig's fps.
    period_s: float = 1 / 30
    # Goals stay this far inside the file's range (as safety.limit_margin_deg), degrees.
    end_margin_deg: float = 2.0
    # A joint this far behind its goal is blocked: its goal stops pushing, degrees. Well above the
    # lag of a joint tracking 1 degree a tick under gravity.
    stall_lag_deg: float = 8.0
    # A leg whose joint ends further than this from its target did not get there, degrees.
    reach_tolerance_deg: float = 5.0
    # Ticks a joint gets to arrive once its goal has reached the target.
    settle_ticks: int = 10

    def __post_init__(self) -> None:
        reject_non_finite(self, "probe")

    def steps(self, degrees: float) -> int:
        """`degrees` in encoder steps."""
        return round(degrees * STEPS_PER_DEG)


@dataclass(frozen=True)
class ProbeLeg:
    """Where one joint was sent in one leg, and where it was when the leg ended (raw steps)."""

    joint: str
    start: int
    target: int
    stopped_at: int


def probe_reach(
    bus: FeetechMotorsBus,
    ranges: Mapping[str, tuple[int, int]],
    config: ProbeConfig,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> list[ProbeLeg]:
    """Move each joint in `ranges` (joint -> (range_min, range_max), raw steps) toward both ends and back.

    Blocks for about (4 x distance_deg / max_step_deg) ticks. Returns the two outbound legs of each
    joint (the way back is not judged). Torque is switched on for the probe where it was off, and off
    again after it.
    """
    joints = list(ranges)
    if not joints:
        return []
    torque_off = [j for j in joints if bus.read("Torque_Enable", j, normalize=False, num_retry=3) != 1]
    if torque_off:
        bus.enable_torque(torque_off, num_retry=3)  # the goal latches to the present position: no jump
    try:
        start = _present(bus, joints)
        distance, margin = config.steps(config.distance_deg), config.steps(config.end_margin_deg)
        up = {j: max(start[j], min(ranges[j][1] - margin, start[j] + distance)) for j in joints}
        down = {j: min(start[j], max(ranges[j][0] + margin, start[j] - distance)) for j in joints}
        goals = dict(start)
        legs = []
        for targets in (up, down):
            stopped = _leg(bus, goals, targets, config, clock, sleep)
            legs += [ProbeLeg(j, start[j], targets[j], stopped[j]) for j in joints]
        _leg(bus, goals, start, config, clock, sleep)
        return legs
    finally:
        if torque_off:
            bus.disable_torque(torque_off, num_retry=3)


def step_toward(goal: int, target: int, max_step: int) -> int:
    """`goal` moved toward `target` by at most `max_step`."""
    return goal + max(-max_step, min(max_step, target - goal))


def _present(bus: FeetechMotorsBus, joints: list[str]) -> dict[str, int]:
    values = bus.sync_read("Present_Position", joints, normalize=False, num_retry=3)
    return {j: int(values[j]) for j in joints}


def _leg(
    bus: FeetechMotorsBus,
    goals: dict[str, int],
    targets: Mapping[str, int],
    config: ProbeConfig,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
) -> dict[str, int]:
    """Step `goals` (updated in place) toward `targets` until each joint is there or blocked; where they ended."""
    joints = list(goals)
    step = max(1, config.steps(config.max_step_deg))
    stall, reach = config.steps(config.stall_lag_deg), config.steps(config.reach_tolerance_deg)
    aims = dict(targets)  # a blocked joint's aim becomes where it stopped
    farthest = max(abs(targets[j] - goals[j]) for j in joints)
    ticks = math.ceil(farthest / step) + 2 * math.ceil(stall / step) + config.settle_ticks
    deadline = clock()
    for _ in range(ticks):
        present = _present(bus, joints)
        if all(goals[j] == aims[j] and abs(present[j] - aims[j]) <= reach for j in joints):
            break  # every joint is where it was last sent
        for j in joints:
            if aims[j] == targets[j] and abs(goals[j] - present[j]) > stall:
                aims[j] = present[j]  # blocked: stop pushing, a step a tick
            goals[j] = step_toward(goals[j], aims[j], step)
        bus.sync_write("Goal_Position", goals, normalize=False)
        deadline += config.period_s
        sleep(max(0.0, deadline - clock()))
    return _present(bus, joints)
