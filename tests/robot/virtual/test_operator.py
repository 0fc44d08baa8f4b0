"""The scripted operator: trajectories move torque-off arms, grasps meet the cloth, traces decode."""

import pytest

from robot.joints import JOINT_NAMES
from robot.virtual.config import TimingMode, VirtualRigConfig
from robot.virtual.protocol import Instruction
from robot.virtual.rig_model import VirtualRigModel
from tests.robot.virtual.helpers import read, transact, write


def fraction(model, arm, joint):
    virtual_arm = model.arms[arm]
    return virtual_arm.to_fraction(joint, virtual_arm.motor(joint).joint.position)


def test_cloth_fold_moves_both_leaders_and_grasps_with_the_followers(model, clock):
    duration = model.operator.play(model.trajectory("cloth_fold"), clock())
    assert 10 < duration < 20
    seen_lift = {"left_leader": [], "right_leader": []}
    grasping = []
    t = 0.0
    while t < duration + 0.5:
        clock.advance(0.05)
        t += 0.05
        model.tick()
        for arm in seen_lift:
            seen_lift[arm].append(fraction(model, arm, "shoulder_lift"))
        grasping.append(model.arms["left_follower"].motor("gripper").joint.object_contact is not None)
    for arm, lifts in seen_lift.items():
        assert max(lifts) - min(lifts) > 0.3, arm  # reached out and came back
        assert all(-0.01 <= f <= 1.01 for f in lifts)  # within the mechanical range
    assert any(grasping)
    assert not grasping[0]
    assert not grasping[-1]
    assert model.operator.status(clock())["finished"] == "cloth_fold"


def test_mirrored_arms_pan_in_opposite_directions(model, clock):
    model.operator.play(model.trajectory("cloth_fold"), clock())
    clock.advance(4.0)
    model.tick()
    assert fraction(model, "left_leader", "shoulder_pan") > 0.53
    assert fraction(model, "right_leader", "shoulder_pan") < 0.47


def test_calibration_sweep_reaches_both_stops_then_lets_go(model, clock):
    arm = "left_follower"
    duration = model.operator.play(model.trajectory("calibration_sweep", [arm]), clock())
    lows = dict.fromkeys(JOINT_NAMES, 1.0)
    highs = dict.fromkeys(JOINT_NAMES, 0.0)
    elapsed = 0.0
    while elapsed < duration + 0.2:
        clock.advance(0.02)
        elapsed += 0.02
        model.tick()
        for joint in JOINT_NAMES:
            f = fraction(model, arm, joint)
            lows[joint], highs[joint] = min(lows[joint], f), max(highs[joint], f)
    assert all(v == pytest.approx(0.0, abs=0.005) for v in lows.values())
    assert all(v == pytest.approx(1.0, abs=0.005) for v in highs.values())
    assert all(m.hand_actual is None for m in model.arms[arm].motors)


def test_hands_move_between_packets(model, clock):
    """A long pause with no traffic: the joint is where the hand took it, not where it was."""
    model.operator.play(model.trajectory("calibration_pose", ["right_leader"]), clock())
    clock.advance(3.0)
    present = read(model, "right_leader", 2, 56, 2)
    middle = model.arms["right_leader"].profiles["shoulder_lift"].homing_offset + 2047
    assert present == pytest.approx(middle % 4096, abs=3)


def test_trace_decodes_traffic(model):
    write(model, "left_follower", 1, 40, 1, 1)
    transact(model, "left_follower", 0xFE, Instruction.SYNC_READ, bytes([56, 2, 1, 2]))
    records = model.trace.records("left_follower")
    write_record = records[0]
    assert write_record["inst"] == "WRITE"
    assert write_record["register"] == "Torque_Enable"
    assert write_record["value"] == 1
    sync = next(r for r in records if r.get("inst") == "SYNC_READ")
    assert sync["register"] == "Present_Position"
    assert sync["ids"] == [1, 2]
    assert [r["id"] for r in records if r["dir"] == "bus->host"][-2:] == [1, 2]


def test_a_model_serving_one_bus_moves_that_arm_exactly_as_the_whole_rig_does(clock):
    # A bus process simulates only its own arm; the arm must not notice (same hands, same tremor).
    config = VirtualRigConfig(timing=TimingMode.INSTANT, tremor_steps=1.5)
    whole = VirtualRigModel(config, clock=clock)
    one = VirtualRigModel(config, clock=clock, served=["right_leader"])
    for model in (whole, one):
        model.operator.play(model.trajectory("cloth_fold"), clock())
    still = {j: one.arms["left_leader"].motor(j).joint.position for j in JOINT_NAMES}
    for _ in range(60):
        clock.advance(0.05)
        whole.tick(buses=["right_leader"])
        one.tick(buses=["right_leader"])
        for joint in JOINT_NAMES:
            moved = one.arms["right_leader"].motor(joint).joint.position
            assert moved == whole.arms["right_leader"].motor(joint).joint.position, joint
    assert {j: one.arms["left_leader"].motor(j).joint.position for j in JOINT_NAMES} == still  # not simulated
    assert whole.arms["left_leader"].motor("shoulder_lift").joint.position != still["shoulder_lift"]


def _lerobot_degrees(model, arm, joint):
    """What LeRobot reads for `joint` of `arm` (its calibration: degrees from the range's middle; gripper 0..100)."""
    from robot.virtual.precalibrated import calibration_values

    calibration = calibration_values(model, arm)[joint]
    motor = model.arms[arm].motor(joint)
    homed = motor.joint.position - calibration["homing_offset"]
    low, high = calibration["range_min"], calibration["range_max"]
    if joint == "gripper":
        return (homed - low) / (high - low) * 100
    return (homed - (low + high) / 2) * 360 / 4095


def test_a_task_plan_in_follower_degrees_puts_the_leaders_where_lerobot_reads_those_degrees(model, clock):
    from robot.cameras.virtual.fold_task import draw_episode, fold_plan
    from robot.joints import Side
    from robot.virtual.control import ControlHandler

    plan = fold_plan(draw_episode(4, failure_rate=0.0))
    handler = ControlHandler(model, ports=None)
    reply = handler.handle({"op": "perform", "plan": plan.to_json()})
    assert reply["ok"], reply
    assert reply["duration_s"] == pytest.approx(plan.duration_s + 1.0)  # a second to reach the plan's start
    start = clock()
    seen_contact = False
    for t_s, joints in plan.keyframes[Side.LEFT][1:]:
        clock.advance(start + t_s + 1.0 - clock())
        model.tick()
        seen_contact |= model.arms["left_follower"].motor("gripper").joint.object_contact is not None
        for joint in JOINT_NAMES:
            # Within half a degree; the gripper within 2 % of its range, against the hand as the emulator models it.
            tolerance = 2.0 if joint == "gripper" else 0.5
            read = _lerobot_degrees(model, "left_leader", joint)
            assert read == pytest.approx(joints[joint], abs=tolerance), (t_s, joint)
    assert seen_contact  # the follower's jaws met the cloth in the plan's grasp window
    refused = handler.handle({"op": "perform", "plan": {"keyframes": {"left": [[0.0, {"gripper": 1.0}]]}}})
    assert not refused["ok"]
    assert "joints" in refused["error"]
