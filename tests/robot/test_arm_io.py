"""Our SO-101 arm adapter on LeRobot's classes, over the real SDK and the in-process virtual bus."""

import pytest

from robot.joints import JOINT_NAMES, MOTOR_IDS


def true_positions(model, arm, follower):
    """What the motors really report, via the emulator's own state."""
    bus = follower.device.bus
    state = {s["motor_id"]: s["present_position"] for s in model.state(arm)[arm]}
    return bus._normalize({MOTOR_IDS[j]: state[MOTOR_IDS[j]] for j in JOINT_NAMES})


def test_read_joints_matches_the_motors(model, make_arm):
    arm = make_arm()
    reading = arm.read_joints()
    assert set(reading.positions) == set(JOINT_NAMES)
    assert reading.attempts == 1
    assert reading.bus_time_s > 0
    truth = true_positions(model, "left_follower", arm)
    assert [reading.positions[j] for j in JOINT_NAMES] == pytest.approx([truth[MOTOR_IDS[j]] for j in JOINT_NAMES])


def test_write_joints_returns_what_was_sent_and_the_arm_gets_there(model, clock, make_arm):
    arm = make_arm()
    goal = {"shoulder_pan": 12.3, "elbow_flex": -500.0, "gripper": 40.0}  # elbow far beyond its range
    sent = arm.write_joints(goal)
    assert sent["shoulder_pan"] == pytest.approx(12.3, abs=0.1)  # one encoder step is 0.088 degrees
    assert sent["elbow_flex"] > -200  # clamped to the calibrated range, and reported as such
    cal = arm.device.bus.calibration["elbow_flex"]
    goal_register = {s["motor_id"]: s["goal_position"] for s in model.state("left_follower")["left_follower"]}
    assert goal_register[MOTOR_IDS["elbow_flex"]] == cal.range_min
    clock.advance(2.0)
    reached = arm.read_joints().positions
    assert reached["shoulder_pan"] == pytest.approx(sent["shoulder_pan"], abs=0.3)
    assert reached["gripper"] == pytest.approx(sent["gripper"], abs=0.3)


def test_write_rejects_unknown_joints(make_arm):
    arm = make_arm()
    with pytest.raises(ValueError, match="unknown joints"):
        arm.write_joints({"elbow": 1.0})


def test_leader_connects_with_torque_off(model, make_arm):
    make_arm("right_leader")
    assert not any(s["torque_enabled"] for s in model.state("right_leader")["right_leader"])


def test_follower_connects_with_torque_on_and_configured(model, make_arm):
    make_arm("right_follower")
    bus = model.buses["right_follower"]
    assert all(s["torque_enabled"] for s in model.state("right_follower")["right_follower"])
    assert all(m.return_delay_s == 0 for m in bus.motors)  # LeRobot's configure() ran


def test_disconnect_releases_torque_by_default_and_can_hold(model, make_arm):
    arm = make_arm("left_follower")
    arm.disconnect(release_torque=False)
    assert all(s["torque_enabled"] for s in model.state("left_follower")["left_follower"])
    arm.connect()
    arm.disconnect()
    assert not any(s["torque_enabled"] for s in model.state("left_follower")["left_follower"])


def test_health_reports_temperature_load_and_voltage(model, clock, make_arm):
    arm = make_arm("left_follower")
    arm.write_joints({"shoulder_lift": 0.0, "elbow_flex": 0.0})  # upper arm up, forearm held out level
    clock.advance(2.0)
    arm.read_joints()  # each joint has moved; its gravity load is worked out again from its neighbours' poses
    clock.advance(0.5)
    model.buses["left_follower"].motor(2).set_temperature(47.0)
    health = arm.read_health()
    assert health.motors["shoulder_lift"].temperature_c == 47
    assert abs(health.motors["shoulder_lift"].load_percent) > 5  # holding the arm against gravity
    assert 11.0 < health.motors["gripper"].voltage_v <= 12.0
    assert health.faults == {}
    assert arm.poll_health(now_s=1000.0) is not None
    assert arm.poll_health(now_s=1000.1) is None
    assert arm.poll_health(now_s=1001.0) is not None
