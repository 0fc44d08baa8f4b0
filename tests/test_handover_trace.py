"""benchmarks/handover_trace.py on small synthetic bus traces shaped like the virtual rig's."""

import pytest

from benchmarks.handover_trace import analyse_handover, analyse_handovers, degrees, present_reads, release_time
from robot.joints import JOINT_NAMES

FPS = 30
TICK = 1 / FPS
STEPS_PER_DEG = 4095 / 360
MID = 2000  # every joint's calibrated range is 1000..3000
FOLLOWERS = ("left_follower", "right_follower")
LEADERS = ("left_leader", "right_leader")
CALIBRATION = {
    arm: {joint: {"id": i + 1, "range_min": 1000, "range_max": 3000} for i, joint in enumerate(JOINT_NAMES)}
    for arm in FOLLOWERS + LEADERS
}


def raw(deg: float) -> int:
    return round(MID + deg * STEPS_PER_DEG)


def goal(t: float, bus: str, deg: float, motors: range = range(1, 7)) -> dict:
    return {
        "t": t,
        "bus": bus,
        "dir": "host->bus",
        "inst": "SYNC_WRITE",
        "register": "Goal_Position",
        "values": {str(m): raw(deg) for m in motors},
    }


def torque(t: float, bus: str, motor: int, value: int) -> dict:
    return {
        "t": t,
        "bus": bus,
        "dir": "host->bus",
        "inst": "WRITE",
        "id": motor,
        "register": "Torque_Enable",
        "value": value,
    }


def read_positions(t: float, bus: str, deg: float) -> list[dict]:
    """A sync read of Present_Position and its six status packets."""
    request = {"t": t, "bus": bus, "dir": "host->bus", "inst": "SYNC_READ", "register": "Present_Position"}
    replies = []
    for motor in range(1, 7):
        body = bytes([motor, 4, 0]) + raw(deg).to_bytes(2, "little")
        packet = b"\xff\xff" + body + bytes([~sum(body) & 0xFF])
        replies.append({"t": t + 0.001, "bus": bus, "dir": "bus->host", "hex": packet.hex(" ")})
    return [request, *replies]


def lerobot_like(
    pause_s: float = 1.0, move_s: float = 2.0, release_s: float = 3.2, leader_deg: float = 40.0
) -> list[dict]:
    """Followers at 30 Hz until the pause, nothing during a blocking leader move, one hold, the release, teleop.

    The leaders are read at `leader_deg` and driven from 40 to 10 degrees.
    """
    records = [goal(k * TICK, arm, 10.0) for k in range(int(pause_s * FPS) + 1) for arm in FOLLOWERS]
    for arm in LEADERS:
        records += read_positions(pause_s + 0.004, arm, leader_deg)
        records += [torque(pause_s + 0.005, arm, m, 1) for m in range(1, 7)]
        moves = round(move_s * FPS)
        records += [goal(pause_s + 0.01 + k * TICK, arm, 40.0 - 30.0 * k / moves) for k in range(moves + 1)]
    hold_s = pause_s + 0.01 + move_s + TICK
    records += [goal(hold_s, arm, 10.0) for arm in FOLLOWERS]
    records += [torque(release_s + 0.001 * m, arm, m, 0) for arm in LEADERS for m in range(1, 7)]
    records += [goal(release_s + 0.02, arm, 12.0) for arm in FOLLOWERS]
    return sorted(records, key=lambda r: r["t"])


def test_degrees_is_lerobots_normalisation():
    assert degrees(2000, {"range_min": 1000, "range_max": 3000}) == 0.0
    assert degrees(2000 + 4095, {"range_min": 1000, "range_max": 3000}) == pytest.approx(360.0)


def test_present_reads_decode_status_packets():
    reads = present_reads(read_positions(0.5, "left_leader", 40.0), "left_leader")
    assert len(reads) == 6
    assert reads[0][1] == {1: raw(40.0)}


def test_a_blocking_handover_misses_the_followers_deadlines():
    figures = analyse_handover(lerobot_like(), CALIBRATION, 1.0, FPS)
    assert figures.released_s == pytest.approx(3.2 + 0.006)  # the last leader motor let go
    assert figures.pause_to_in_control_s == pytest.approx(2.206)
    # Each follower: its last goal before the pause at 1.0 s, the hold at 3.043 (60 deadlines passed), the
    # first teleop goal at 3.22 (4 more).
    for timing in figures.follower_timing.values():
        assert timing.deadline_misses == 2
        assert timing.missed_ticks == (round(2.043 * FPS) - 1) + (round(0.177 * FPS) - 1)
        assert timing.longest_gap_s == pytest.approx(2.043, abs=1e-3)
        assert timing.first_step_after_release_deg == pytest.approx(2.0, abs=0.1)
    assert figures.follower_deadline_misses == 4
    assert figures.largest_follower_step_deg == 0.0  # the hold repeats the last goal
    # The leaders: 30 deg over 60 writes, from the position read just before.
    assert figures.largest_leader_step_deg == pytest.approx(0.5, abs=0.1)
    assert figures.largest_leader_step_per_tick_deg == pytest.approx(0.5, abs=0.1)
    assert figures.leaders["left_leader"].writes == 61


def test_a_leader_goal_far_from_where_the_leader_is_counts_as_a_step():
    figures = analyse_handover(lerobot_like(leader_deg=100.0), CALIBRATION, 1.0, FPS)  # first goal: 40 deg
    assert figures.leaders["left_leader"].max_step_deg == pytest.approx(60.0, abs=0.1)
    assert figures.leaders["left_leader"].max_step_joint == JOINT_NAMES[0]


def test_a_continuous_handover_misses_nothing_and_steps_are_scaled_to_a_tick():
    records = [goal(k * TICK, arm, 0.5 * k) for k in range(60) for arm in FOLLOWERS]  # 0.5 deg a tick
    late = 60 * TICK + TICK  # one write comes a tick late (2 periods: not a miss) with a 2 deg step
    records += [goal(late, "left_follower", 0.5 * 59 + 2.0)]
    records += [torque(1.5, arm, m, 1) for arm in LEADERS for m in range(1, 7)]
    records += [torque(2.5, arm, m, 0) for arm in LEADERS for m in range(1, 7)]
    records += [goal(2.5 + k * TICK, arm, 40.0) for k in range(1, 3) for arm in FOLLOWERS]
    figures = analyse_handover(sorted(records, key=lambda r: r["t"]), CALIBRATION, 1.0, FPS)
    assert figures.follower_timing["right_follower"].deadline_misses == 1  # its writes stop at 1.97 s
    left = figures.followers["left_follower"]
    assert left.max_step_deg == pytest.approx(2.0, abs=0.1)
    assert left.max_step_per_tick_deg == pytest.approx(1.0, abs=0.1)  # 2 deg over two periods
    assert figures.follower_timing["left_follower"].missed_ticks > 0  # nothing from 2.03 s to the release


def test_the_leaders_are_released_only_when_every_leader_motor_is():
    records = [torque(1.1, arm, m, 1) for arm in LEADERS for m in range(1, 7)]
    records += [torque(2.0, "left_leader", m, 0) for m in range(1, 7)]
    assert release_time(records, CALIBRATION, 1.0, float("inf")) is None
    records += [torque(2.1, "right_leader", m, 0) for m in range(1, 7)]
    assert release_time(records, CALIBRATION, 1.0, float("inf")) == pytest.approx(2.1)
    figures = analyse_handover(records[:-6], CALIBRATION, 1.0, FPS)
    assert figures.released_s is None
    assert figures.pause_to_in_control_s is None


def test_each_handover_ends_before_the_next_pause():
    first = lerobot_like(pause_s=1.0, release_s=3.2)
    second = [{**r, "t": r["t"] + 5.0} for r in lerobot_like(pause_s=1.0, release_s=3.2) if r["t"] > 0.5]
    unreleased = [r for r in first if r.get("register") != "Torque_Enable" or r["value"] == 1]
    figures = analyse_handovers(unreleased + second, CALIBRATION, [6.0, 1.0], FPS)
    assert [f.pause_s for f in figures] == [1.0, 6.0]
    assert figures[0].released_s is None  # the second handover's release is not the first one's
    assert figures[1].pause_to_in_control_s == pytest.approx(2.206)


def test_torque_on_then_off_within_one_stamp_is_a_release():
    """Leaders already at the followers get torque on and off in one tick: the stamps tie, the order decides."""
    records = [torque(1.0, arm, m, value) for arm in LEADERS for value in (1, 0) for m in range(1, 7)]
    assert release_time(records, CALIBRATION, 0.5, 2.0) == 1.0
