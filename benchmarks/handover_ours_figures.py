"""One handover's bus trace, beyond benchmarks/handover_trace.py: steps per kind of joint, and after the release.

    split = joint_kind_steps(records, calibration, figures.pause_s, figures.released_s, fps=30)
    split["left_leader"]  # {"body_max_step_deg": 1.05, "gripper_max_step_percent": 1.07, ...}
    after = after_release(records, calibration, figures, until_s=hand_back_s + 0.5, fps=30)

Why per kind: our safety layer ramps body joints in degrees (`ramp_speed_deg_s` / fps a tick) and the
gripper in percent of its calibrated range (the same number, in %/tick), so the gripper's ramp step in
degrees is its range's 1 % (12-15 encoder counts on the virtual arms, 1.05-1.34 deg): checking it against
the body's 1 deg/tick would be checking the wrong unit. Steps are per write (our loop writes once a
tick); the per-tick figure of handover_trace divides by the time since the step's baseline, which for a
leader's first goal is the present read a few milliseconds earlier in the same tick.

Why after the release: handover_trace's window ends when the leaders' torque is released; the
followers then take the person's pose (meant as a ramped transition of the safety layer), and at the hand
back the policy's. `after_release` gives the followers' largest steps and deadline misses from the
release to `until_s`.
"""

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from benchmarks.handover_trace import (
    FOLLOWER_SUFFIX,
    LEADER_SUFFIX,
    STEPS_PER_TURN,
    Calibration,
    HandoverFigures,
    Write,
    arm_steps,
    follower_timing,
    present_reads,
    register_writes,
)

GRIPPER = "gripper"


def _joints(joints: Mapping[str, Mapping[str, Any]], gripper: bool) -> dict[int, tuple[str, Mapping[str, Any]]]:
    return {int(cal["id"]): (name, cal) for name, cal in joints.items() if (name == GRIPPER) == gripper}


def _last_before(series: Sequence[Write], t_s: float) -> dict[int, tuple[float, int]]:
    """Each motor's last value at or before `t_s`, with its time."""
    last: dict[int, tuple[float, int]] = {}
    for t, values in series:
        if t > t_s:
            break
        last |= {motor: (t, raw) for motor, raw in values.items()}
    return last


def arm_kind_steps(
    writes: Sequence[Write],
    baseline: Mapping[int, tuple[float, int]],
    joints: Mapping[str, Mapping[str, Any]],
    fps: float,
) -> dict[str, Any]:
    """One arm's largest goal steps per write: body joints in degrees, the gripper in % of its range."""
    body = arm_steps(writes, baseline, _joints(joints, gripper=False), fps)
    gripper = arm_steps(writes, baseline, _joints(joints, gripper=True), fps)
    span = joints[GRIPPER]["range_max"] - joints[GRIPPER]["range_min"]
    to_percent = STEPS_PER_TURN / 360 * 100 / span  # degrees -> % of the gripper's range
    return {
        "body_max_step_deg": body.max_step_deg,
        "body_max_step_joint": body.max_step_joint,
        "body_max_step_per_tick_deg": body.max_step_per_tick_deg,
        "gripper_max_step_percent": gripper.max_step_deg * to_percent,
        "gripper_max_step_deg": gripper.max_step_deg,
        "gripper_one_percent_deg": 1 / to_percent,
    }


def joint_kind_steps(
    records: Sequence[Mapping[str, Any]], calibration: Calibration, start_s: float, end_s: float, fps: float
) -> dict[str, dict[str, Any]]:
    """Each arm's `arm_kind_steps` for its goals in (start_s, end_s], baselines as handover_trace takes them.

    A follower's first step is measured from its last goal at or before `start_s`, a leader's from
    its last position read before its first goal in the window.
    """
    out = {}
    for bus, joints in calibration.items():
        writes = register_writes(records, bus, "Goal_Position")
        inside = [(t, v) for t, v in writes if start_s < t <= end_s]
        if bus.endswith(FOLLOWER_SUFFIX):
            baseline = _last_before(writes, start_s)
        elif bus.endswith(LEADER_SUFFIX) and inside:
            baseline = {
                m: v for m, v in _last_before(present_reads(records, bus), inside[0][0]).items() if v[0] < inside[0][0]
            }
        else:
            baseline = {}
        out[bus] = arm_kind_steps(inside, baseline, joints, fps) | {"writes": len(inside)}
    return out


def after_release(
    records: Sequence[Mapping[str, Any]], calibration: Calibration, figures: HandoverFigures, until_s: float, fps: float
) -> dict[str, Any]:
    """The followers from the leaders' release to `until_s`: largest steps per kind of joint, deadline misses."""
    if figures.released_s is None:
        return {}
    start = figures.released_s
    followers = {bus: joints for bus, joints in calibration.items() if bus.endswith(FOLLOWER_SUFFIX)}
    steps = joint_kind_steps(records, followers, start, until_s, fps)
    timing = {}
    for bus, joints in followers.items():
        by_id = {int(cal["id"]): (name, cal) for name, cal in joints.items()}
        writes = [w for w in register_writes(records, bus, "Goal_Position") if w[0] <= until_s]
        timing[bus] = asdict(follower_timing(writes, start, until_s, fps, by_id))
    return {"from_s": start, "until_s": until_s, "followers": steps, "follower_timing": timing}


def first_torque_on(records: Sequence[Mapping[str, Any]], calibration: Calibration, after_s: float) -> float | None:
    """When a leader motor first had Torque_Enable=1 written after `after_s` (our take-over tick); None: never."""
    times = [
        t
        for bus in calibration
        if bus.endswith(LEADER_SUFFIX)
        for t, values in register_writes(records, bus, "Torque_Enable")
        if t > after_s and any(values.values())
    ]
    return min(times, default=None)


def largest_follower_step(
    records: Sequence[Mapping[str, Any]], calibration: Calibration, start_s: float, end_s: float, fps: float
) -> float:
    """The largest follower goal step of any joint per write in (start_s, end_s], degrees (handover_trace's units)."""
    steps = [
        arm_steps(
            [(t, v) for t, v in writes if start_s < t <= end_s],
            _last_before(writes, start_s),
            {int(cal["id"]): (name, cal) for name, cal in joints.items()},
            fps,
        ).max_step_deg
        for bus, joints in calibration.items()
        if bus.endswith(FOLLOWER_SUFFIX)
        for writes in [register_writes(records, bus, "Goal_Position")]
    ]
    return max(steps, default=0.0)


def follower_misses(
    records: Sequence[Mapping[str, Any]], calibration: Calibration, start_s: float, end_s: float, fps: float
) -> dict[str, Any]:
    """The followers' deadline misses (handover_trace's definition) in [start_s, end_s], summed, and the longest gap."""
    misses = ticks = 0
    longest = 0.0
    for bus, joints in calibration.items():
        if not bus.endswith(FOLLOWER_SUFFIX):
            continue
        by_id = {int(cal["id"]): (name, cal) for name, cal in joints.items()}
        writes = [w for w in register_writes(records, bus, "Goal_Position") if w[0] <= end_s]
        timing = follower_timing(writes, start_s, end_s, fps, by_id)
        misses, ticks = misses + timing.deadline_misses, ticks + timing.missed_ticks
        longest = max(longest, timing.longest_gap_s)
    return {"follower_deadline_misses": misses, "follower_missed_ticks": ticks, "longest_gap_s": longest}


def worst(split: Mapping[str, Mapping[str, Any]], key: str, suffix: str) -> float:
    """The largest `key` over the arms whose bus name ends with `suffix`."""
    return max((arm[key] for bus, arm in split.items() if bus.endswith(suffix)), default=0.0)
