"""Driving the leaders to the followers for a handover, on the in-process virtual rig (real clock).

The leaders start 40 degrees from the target: every goal sent to them moves at most one ramp step a
tick (ramp_speed_deg_s / fps), they arrive, and release leaves every leader motor without torque.
An e-stop while driving stops them where they are, torque kept on.
"""

import time

import numpy as np

from robot.joint_values import JointValues
from robot.joints import JOINT_NAMES, Role, Side, arm_name
from robot.rig import BimanualRig
from tests.support.rig_reads import goals, torque

PERIOD_S = 1 / 30
STEPS_PER_DEG = 4095 / 360
LEADERS = [arm_name(side, Role.LEADER) for side in Side]


def leader_pose(rig: BimanualRig) -> JointValues:
    return rig.observe().leader_action()


def drive(rig: BimanualRig, model, target: JointValues, ticks: int) -> tuple[list, bool]:
    """Tick the drive toward `target` at 30 Hz; returns each leader's goal registers per tick and arrival."""
    drive = rig.leader_drive()
    drive.begin(leader_pose(rig))
    seen = [[goals(model, arm) for arm in LEADERS]]
    now = time.monotonic()
    for _ in range(ticks):
        now += PERIOD_S
        time.sleep(max(0.0, now - time.monotonic()))
        drive.step(target, now, PERIOD_S)
        seen.append([goals(model, arm) for arm in LEADERS])
        if drive.arrived(leader_pose(rig), target, tolerance_deg=2.0):
            return seen, True
    return seen, False


def far_target(rig: BimanualRig) -> JointValues:
    """The leaders' pose with shoulder_pan and elbow_flex 40 degrees toward the middle, the gripper 30 % over."""
    target = leader_pose(rig)
    for side in Side:
        for joint in ("shoulder_pan", "elbow_flex"):
            here = target[side, joint]
            target = target.with_joint(side, joint, here + (40.0 if here < 0 else -40.0))
        target = target.with_joint(side, "gripper", min(90.0, target[side, "gripper"] + 30.0))
    return target


def test_driven_leaders_ramp_to_the_target_then_release(live_model, rig_setup):
    with rig_setup() as rig:
        for arm in LEADERS:
            assert not any(torque(live_model, arm)), f"{arm} starts with torque (leaders are the person's)"
        target = far_target(rig)
        seen, arrived = drive(rig, live_model, target, ticks=300)
        assert arrived, "the leaders did not reach the target in 10 s"
        for arm in LEADERS:
            assert all(torque(live_model, arm)), f"{arm}: driving needs torque on"
        steps = np.abs(np.diff(np.array(seen), axis=0))  # (ticks, leader, motor), encoder steps
        ramp_counts = rig.safety.ramp_speed_deg_s * PERIOD_S * STEPS_PER_DEG
        body = [i for i, joint in enumerate(JOINT_NAMES) if joint != "gripper"]
        assert steps[:, :, body].max() <= ramp_counts + 1, "a leader goal step beyond the ramp"  # + one count
        assert steps.sum(axis=0)[:, body].max() >= 35 * STEPS_PER_DEG, "the leaders did travel (about 40 degrees)"
        # The gripper ramps at the same number in percent of its range a second.
        gripper = JOINT_NAMES.index("gripper")
        calibration = {arm: live_model.arms[arm].profiles["gripper"] for arm in LEADERS}
        for index, arm in enumerate(LEADERS):
            span = calibration[arm].range_max - calibration[arm].range_min
            percent_steps = steps[:, index, gripper] * 100.0 / span
            assert percent_steps.max() <= rig.safety.ramp_speed_deg_s * PERIOD_S + 100.0 / span + 1e-9
        rig.leader_drive().release()
        for arm in LEADERS:
            assert not any(torque(live_model, arm)), f"{arm} keeps torque after the release"


def test_an_estop_while_driving_stops_the_leaders_where_they_are(live_model, rig_setup):
    with rig_setup() as rig:
        target = far_target(rig)
        _, arrived = drive(rig, live_model, target, ticks=15)  # half a second: on the way
        assert not arrived
        rig.freeze("e-stop")
        frozen = [goals(live_model, arm) for arm in LEADERS]
        time.sleep(0.3)
        for arm, before in zip(LEADERS, frozen, strict=True):
            assert all(torque(live_model, arm)), f"{arm}: a frozen leader keeps torque until the exit"
            assert goals(live_model, arm) == before, f"{arm} moved after the e-stop"
            present = [m["present_position"] for m in live_model.state(arm)[arm]]
            assert max(abs(g - p) for g, p in zip(before, present, strict=True)) <= 3, (before, present)
    for arm in LEADERS:
        assert not any(torque(live_model, arm)), f"{arm}: the exit releases the leaders, e-stop or not"
