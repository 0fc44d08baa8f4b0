"""Mechanics of the emulated motors on a hand-driven clock: tracking, speed limit, stall, heat."""

import itertools

import pytest

from robot.feetech.sts3215 import ErrorBit, decode_sign_magnitude
from robot.virtual.physics import JointModel
from robot.virtual.protocol import Instruction
from tests.robot.virtual.helpers import read, transact, write

BUS = "right_follower"
TORQUE, GOAL, GOAL_SPEED, PRESENT, LOAD, TEMP, STATUS, LOCK = 40, 42, 46, 56, 60, 63, 65, 55


def test_follower_reaches_its_goal_within_tolerance_and_speed_limit(model, clock):
    write(model, BUS, 1, TORQUE, 1, 1)
    start = read(model, BUS, 1, PRESENT, 2)
    goal = start - 900 if start > 2048 else start + 900
    write(model, BUS, 1, GOAL_SPEED, 1500, 2)  # steps/s
    write(model, BUS, 1, GOAL, goal, 2)
    positions = []
    for _ in range(150):  # 1.5 s in 10 ms steps
        clock.advance(0.01)
        positions.append(read(model, BUS, 1, PRESENT, 2))
    speeds = [abs(b - a) / 0.01 for a, b in itertools.pairwise(positions)]
    assert max(speeds) <= 1500 * 1.01 + 100  # never faster than the commanded speed (+1 step of rounding)
    assert abs(positions[-1] - goal) <= 2
    assert abs(positions[50] - goal) > 10  # and it took its time: 900 steps at 1500 steps/s is 0.6 s


def test_goal_is_clamped_to_the_position_limits(model, clock):
    write(model, BUS, 2, LOCK, 0, 1)
    present = read(model, BUS, 2, PRESENT, 2)
    write(model, BUS, 2, 11, present + 100, 2)  # Max_Position_Limit
    write(model, BUS, 2, TORQUE, 1, 1)
    write(model, BUS, 2, GOAL, present + 800, 2)
    clock.advance(2.0)
    assert abs(read(model, BUS, 2, PRESENT, 2) - (present + 100)) <= 1


def test_mechanical_stop_blocks_the_joint_and_loads_the_motor(model, clock):
    motor = model.buses[BUS].motor(3)
    stop = motor.joint.model.stop_max
    write(model, BUS, 3, TORQUE, 1, 1)
    present = read(model, BUS, 3, PRESENT, 2)
    beyond = present + int(stop - motor.joint.position) + 200
    write(model, BUS, 3, GOAL, min(beyond, 4095), 2)
    clock.advance(1.0)
    read(model, BUS, 3, PRESENT, 2)
    assert motor.joint.position == pytest.approx(stop)
    assert read(model, BUS, 3, LOAD, 2) > 300  # pushing against the stop


def test_hand_moves_a_torque_off_joint_but_not_a_torqued_one(model, clock):
    arm = model.arms[BUS]
    wrist = arm.motor("wrist_flex")
    model.operator.set_hand(BUS, "wrist_flex", 0.8, clock())
    clock.advance(1.0)
    read(model, BUS, 4, PRESENT, 2)
    assert arm.to_fraction("wrist_flex", wrist.joint.position) == pytest.approx(0.8, abs=0.01)
    write(model, BUS, 4, TORQUE, 1, 1)
    model.operator.set_hand(BUS, "wrist_flex", 0.2, clock())
    clock.advance(1.0)
    read(model, BUS, 4, PRESENT, 2)
    assert arm.to_fraction("wrist_flex", wrist.joint.position) == pytest.approx(0.8, abs=0.01)


def test_gripper_stall_heats_the_motor_and_trips_overload_protection(model, clock):
    bus = model.buses[BUS]
    gripper = bus.motor(6)
    model.set_object(BUS, holding=True)
    write(model, BUS, 6, TORQUE, 1, 1)
    closed = read(model, BUS, 6, PRESENT, 2) - int(gripper.joint.position - gripper.joint.model.stop_min)
    write(model, BUS, 6, GOAL, max(0, closed), 2)  # squeeze: the cloth is in the way
    start_temp = gripper.joint.temperature_c
    tripped_at = None
    for step in range(300):  # 30 s
        clock.advance(0.1)
        status = read(model, BUS, 6, STATUS, 1)
        if status & ErrorBit.OVERLOAD and tripped_at is None:
            tripped_at = step * 0.1
    assert gripper.joint.object_contact is not None
    assert gripper.joint.position == pytest.approx(gripper.joint.lower_limit())
    assert tripped_at is not None
    assert 1.5 <= tripped_at <= 3.0
    assert gripper.joint.temperature_c > start_temp + 0.5
    # Protection cuts the torque to Protective_Torque (the grasp weakens, it does not let go), and
    # every status packet carries the bit.
    assert read(model, BUS, 6, TORQUE, 1) == 1
    assert abs(decode_sign_magnitude(read(model, BUS, 6, LOAD, 2), 10)) <= 200
    ((_, error, _),) = transact(model, BUS, 6, Instruction.PING)
    assert error & ErrorBit.OVERLOAD
    write(model, BUS, 6, GOAL, read(model, BUS, 6, PRESENT, 2), 2)  # stop squeezing
    clock.advance(0.1)
    assert not read(model, BUS, 6, STATUS, 1) & ErrorBit.OVERLOAD


def test_sustained_heat_trips_overheat():
    from robot.virtual.physics import Drive, JointPhysics

    joint = JointPhysics(JointModel(stop_min=0, stop_max=4000, rest=2000))
    drive = Drive(True, 4500.0, 1000.0, 0.0, 0.0, 1.0, None)  # pushing past the stop at full torque
    for _ in range(600):
        joint.advance(1.0, drive)
    assert joint.temperature_c > 70  # full load for 10 minutes: hotter than Max_Temperature_Limit


def test_idle_gaps_are_settled_exactly(model, clock):
    motor = model.buses[BUS].motor(1)
    write(model, BUS, 1, TORQUE, 1, 1)
    motor.set_temperature(60.0)
    clock.advance(3600.0)  # an hour with no traffic
    assert read(model, BUS, 1, TEMP, 1) == 25  # cooled back to ambient
