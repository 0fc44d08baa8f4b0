"""How smooth a policy -> person handover was, read from the virtual rig's bus trace alone.

    records = client.trace()                                # VirtualRigClient: every packet, timestamped
    figures = analyse_handovers(records, calibration, [t_pause_1, t_pause_2], fps=30)
    figures[0].pause_to_in_control_s, figures[0].largest_follower_step_deg, ...

Independent of who drove the arms (LeRobot's DAgger, our so101-deploy): it sees only Goal_Position
and Torque_Enable writes and Present_Position replies on the four buses. One handover's window runs
from the pause request (a monotonic time, the rig's clock is this machine's) to the moment the
leaders' torque is released: every leader motor has had Torque_Enable=0 written after the pause
("person in control"). In that window, per arm:

- the largest goal step of any joint between consecutive goal writes, in degrees with LeRobot's
  normalisation ((steps - mid) * 360 / 4095, mid of the calibrated range), per write and per 1/fps
  of time (step * 1/(dt * fps): a write that comes late is not counted as a jerk for its lateness).
  A follower's first step is measured from its last goal before the pause (the command stream
  must stay continuous); a leader's from the position read just before its first goal (a leader is
  free before a handover: what matters is where its goals start from against where it is);
- for followers, deadline misses: gaps between consecutive goal writes longer than 1.5/fps that
  overlap the window (the first write after the release closes the last gap), and the ticks those
  gaps swallowed (round(gap * fps) - 1 each, as benchmarks/deploy_loop_trace.py counts them).

Also the step of each follower's first goal after the release: the jerk when the person's leader
pose takes over. Gripper goals are in degrees too (the motor's angle), not LeRobot's 0-100 range.
"""

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

STEPS_PER_TURN = 4095  # LeRobot's DEGREES normalisation divides by this (tests/support, lerobot motors_bus)
MISS_FACTOR = 1.5  # a gap between follower goal writes longer than this many periods is a deadline miss
FOLLOWER_SUFFIX, LEADER_SUFFIX = "_follower", "_leader"

Calibration = Mapping[str, Mapping[str, Mapping[str, Any]]]  # bus -> joint -> LeRobot's calibration fields
Write = tuple[float, dict[int, int]]  # (time s, value by motor id)


@dataclass(frozen=True)
class ArmSteps:
    """One arm's goal steps inside a handover window."""

    writes: int  # goal writes to this arm in the window
    max_step_deg: float  # largest |goal change| of one joint between consecutive writes
    max_step_joint: str | None  # the joint that made it
    max_step_per_tick_deg: float  # largest |goal change| / (dt * fps): the step scaled to one 1/fps


@dataclass(frozen=True)
class FollowerTiming:
    """One follower's command stream around a handover."""

    deadline_misses: int  # gaps between goal writes longer than MISS_FACTOR / fps, overlapping the window
    missed_ticks: int  # deadlines those gaps passed without a write
    longest_gap_s: float  # longest gap between goal writes overlapping the window
    first_step_after_release_deg: float | None  # |goal change| of the first write after the release


@dataclass(frozen=True)
class HandoverFigures:
    """One handover, from the pause request to the leaders' torque release."""

    pause_s: float  # monotonic time of the pause request
    released_s: float | None  # when the last leader motor's torque was released; None: never in the trace
    fps: float
    followers: dict[str, ArmSteps] = field(default_factory=dict)
    leaders: dict[str, ArmSteps] = field(default_factory=dict)
    follower_timing: dict[str, FollowerTiming] = field(default_factory=dict)

    @property
    def pause_to_in_control_s(self) -> float | None:
        """Seconds from the pause request until the person has the leaders (None: not released)."""
        return None if self.released_s is None else self.released_s - self.pause_s

    @property
    def largest_follower_step_deg(self) -> float:
        """Largest follower goal step per write, over both followers."""
        return max((arm.max_step_deg for arm in self.followers.values()), default=0.0)

    @property
    def largest_follower_step_per_tick_deg(self) -> float:
        """Largest follower goal step per 1/fps of time, over both followers."""
        return max((arm.max_step_per_tick_deg for arm in self.followers.values()), default=0.0)

    @property
    def largest_leader_step_deg(self) -> float:
        """Largest leader goal step per write, over both leaders."""
        return max((arm.max_step_deg for arm in self.leaders.values()), default=0.0)

    @property
    def largest_leader_step_per_tick_deg(self) -> float:
        """Largest leader goal step per 1/fps of time, over both leaders."""
        return max((arm.max_step_per_tick_deg for arm in self.leaders.values()), default=0.0)

    @property
    def follower_deadline_misses(self) -> int:
        """Deadline misses summed over the followers."""
        return sum(timing.deadline_misses for timing in self.follower_timing.values())

    @property
    def follower_missed_ticks(self) -> int:
        """Ticks without a follower command, summed over the followers."""
        return sum(timing.missed_ticks for timing in self.follower_timing.values())


def degrees(raw: int, joint_calibration: Mapping[str, Any]) -> float:
    """LeRobot's DEGREES normalisation of a raw position (0 at the middle of the calibrated range)."""
    middle = (joint_calibration["range_min"] + joint_calibration["range_max"]) / 2
    return (raw - middle) * 360 / STEPS_PER_TURN


def register_writes(records: Iterable[Mapping[str, Any]], bus: str, register: str) -> list[Write]:
    """(time, value by motor id) of every write of `register` to `bus`, sync or single, in trace order."""
    writes = []
    for record in records:
        if record.get("bus") != bus or record.get("dir") != "host->bus" or record.get("register") != register:
            continue
        if record.get("inst") == "SYNC_WRITE":
            writes.append((float(record["t"]), {int(k): int(v) for k, v in record["values"].items()}))
        elif record.get("inst") == "WRITE":
            writes.append((float(record["t"]), {int(record["id"]): int(record["value"])}))
    return writes


def present_reads(records: Iterable[Mapping[str, Any]], bus: str) -> list[Write]:
    """(time, position by motor id) of each status packet answering a Present_Position read on `bus`."""
    reads: list[Write] = []
    reading = False
    for record in records:
        if record.get("bus") != bus:
            continue
        if record.get("dir") == "host->bus":
            reading = record.get("register") == "Present_Position" and record.get("inst") in ("READ", "SYNC_READ")
            continue
        if not reading:
            continue
        data = bytes.fromhex(record.get("hex", ""))
        values = {}
        while len(data) >= 8 and data[:2] == b"\xff\xff":  # ff ff id length error p0 p1 checksum
            if data[3] == 4:
                values[data[2]] = int.from_bytes(data[5:7], "little")
            data = data[4 + data[3] :]
        if values:
            reads.append((float(record["t"]), values))
    return reads


def release_time(
    records: Sequence[Mapping[str, Any]], calibration: Calibration, start_s: float, end_s: float
) -> float | None:
    """When every leader motor has had Torque_Enable=0 written in [start_s, end_s); None if never.

    The motors count as held from `start_s` on: a handover drives the leaders under torque, and
    what the person waits for is the last of them let go.
    """
    held = {
        (bus, int(joint["id"]))
        for bus, joints in calibration.items()
        if bus.endswith(LEADER_SUFFIX)
        for joint in joints.values()
    }
    # By time only, ties kept in trace order: packets read together share a whole-microsecond stamp,
    # and a handover whose leaders are already there turns torque on and then off within one tick.
    writes = sorted(
        (
            (t, bus, motor, value)
            for bus in sorted({bus for bus, _ in held})
            for t, values in register_writes(records, bus, "Torque_Enable")
            if start_s <= t < end_s
            for motor, value in values.items()
        ),
        key=lambda write: write[0],
    )
    for t, bus, motor, value in writes:
        if value:
            held.add((bus, motor))
        else:
            held.discard((bus, motor))
        if not held:
            return t
    return None


def arm_steps(
    writes: Sequence[Write],
    baseline: Mapping[int, tuple[float, int]],
    joints_by_id: Mapping[int, tuple[str, Mapping[str, Any]]],
    fps: float,
) -> ArmSteps:
    """Goal steps of `writes` (one arm's, in the window), each joint's first measured from `baseline` (time, raw)."""
    last = dict(baseline)
    best, best_joint, best_per_tick = 0.0, None, 0.0
    for t, values in writes:
        for motor, raw in values.items():
            if motor in last and motor in joints_by_id:
                joint, cal = joints_by_id[motor]
                step = abs(degrees(raw, cal) - degrees(last[motor][1], cal))
                if step > best:
                    best, best_joint = step, joint
                dt = t - last[motor][0]
                if dt > 0:
                    best_per_tick = max(best_per_tick, step / (dt * fps))
            last[motor] = (t, raw)
    return ArmSteps(
        writes=len(writes), max_step_deg=best, max_step_joint=best_joint, max_step_per_tick_deg=best_per_tick
    )


def follower_timing(
    writes: Sequence[Write],
    start_s: float,
    end_s: float,
    fps: float,
    joints_by_id: Mapping[int, tuple[str, Mapping[str, Any]]],
) -> FollowerTiming:
    """Gaps between one follower's goal writes that overlap [start_s, end_s], and its first step after end_s."""
    times = [t for t, _ in writes]
    after = next((i for i, t in enumerate(times) if t > end_s), None)
    if after is None:  # no write after the release in the trace: the gap stays open up to the release
        times = [*times, end_s]
    misses = ticks = 0
    longest = 0.0
    for a, b in itertools.pairwise(times):
        if b <= start_s or a >= end_s:
            continue
        gap = b - a
        longest = max(longest, gap)
        if gap > MISS_FACTOR / fps:
            misses += 1
            ticks += max(0, round(gap * fps) - 1)
    first_step = None
    if after is not None and after > 0:
        before, now = writes[after - 1][1], writes[after][1]
        steps = [
            abs(degrees(now[m], joints_by_id[m][1]) - degrees(before[m], joints_by_id[m][1]))
            for m in now
            if m in before and m in joints_by_id
        ]
        first_step = max(steps, default=None)
    return FollowerTiming(misses, ticks, longest, first_step)


def _joints_by_id(joints: Mapping[str, Mapping[str, Any]]) -> dict[int, tuple[str, Mapping[str, Any]]]:
    return {int(cal["id"]): (joint, cal) for joint, cal in joints.items()}


def _leader_baseline(
    records: Sequence[Mapping[str, Any]], bus: str, first_goal_s: float
) -> dict[int, tuple[float, int]]:
    """Each leader motor's last read position before its first goal of the window."""
    baseline: dict[int, tuple[float, int]] = {}
    for t, values in present_reads(records, bus):
        if t >= first_goal_s:
            break
        baseline |= {motor: (t, raw) for motor, raw in values.items()}
    return baseline


def analyse_handover(
    records: Sequence[Mapping[str, Any]],
    calibration: Calibration,
    pause_s: float,
    fps: float,
    *,
    until_s: float = float("inf"),
) -> HandoverFigures:
    """The figures of the handover requested at `pause_s` (a release is looked for before `until_s`)."""
    released = release_time(records, calibration, pause_s, until_s)
    end_s = released if released is not None else min(until_s, max((float(r["t"]) for r in records), default=pause_s))
    followers, leaders, timing = {}, {}, {}
    for bus, joints in calibration.items():
        by_id = _joints_by_id(joints)
        writes = register_writes(records, bus, "Goal_Position")
        inside = [(t, v) for t, v in writes if pause_s < t <= end_s]
        if bus.endswith(FOLLOWER_SUFFIX):
            baseline: dict[int, tuple[float, int]] = {}
            for t, values in writes:
                if t > pause_s:
                    break
                baseline |= {motor: (t, raw) for motor, raw in values.items()}
            followers[bus] = arm_steps(inside, baseline, by_id, fps)
            timing[bus] = follower_timing([w for w in writes if w[0] < until_s], pause_s, end_s, fps, by_id)
        elif bus.endswith(LEADER_SUFFIX):
            baseline = _leader_baseline(records, bus, inside[0][0]) if inside else {}
            leaders[bus] = arm_steps(inside, baseline, by_id, fps)
    return HandoverFigures(pause_s, released, fps, followers, leaders, timing)


def analyse_handovers(
    records: Sequence[Mapping[str, Any]], calibration: Calibration, pause_times_s: Sequence[float], fps: float
) -> list[HandoverFigures]:
    """One `HandoverFigures` per pause request; each handover's release is looked for before the next pause."""
    ordered = sorted(pause_times_s)
    ends = [*ordered[1:], float("inf")]
    return [
        analyse_handover(records, calibration, pause, fps, until_s=end)
        for pause, end in zip(ordered, ends, strict=True)
    ]
