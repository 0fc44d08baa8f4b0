"""The fitted servo model (`virtual.dynamics: fitted`): latency, gravity sag, grip, backlash, torque limit."""

import math
from dataclasses import replace
from pathlib import Path

import pytest

from robot.cli import UsageError, parse_command
from robot.commands.calibrate import CalibrateConfig
from robot.feetech.sts3215 import REGISTERS, decode_sign_magnitude
from robot.joints import JOINT_NAMES, Role
from robot.virtual.arms import build_motors, middle_actual
from robot.virtual.config import ServoDynamics, TimingMode, VirtualRigConfig, config_from_json, config_to_json
from robot.virtual.motor import Motor
from robot.virtual.physics import JointPhysics
from robot.virtual.profiles import FOLLOWER_PROFILE
from robot.virtual.rig_model import VirtualRigModel
from robot.virtual.servo_dynamics import ServoJointPhysics
from robot.virtual.servo_params import ServoParams, load_fitted

FRAME_S = 1 / 30
LEROBOT = {
    "P_Coefficient": 16,
    "I_Coefficient": 0,
    "D_Coefficient": 32,
    "Acceleration": 254,
    "Maximum_Acceleration": 254,
}


class Arm:
    """One emulated follower under the fitted model, configured as LeRobot's configure() leaves it."""

    def __init__(self, params: ServoParams, supply_v: float | None = None) -> None:
        self.t = 0.0
        motors = build_motors(FOLLOWER_PROFILE, Role.FOLLOWER, 0.0, supply_v, ServoDynamics.FITTED, params)
        self.motors = dict(zip(JOINT_NAMES, motors, strict=True))
        for joint in self.motors:
            profile = FOLLOWER_PROFILE[joint]
            calibration = {
                "Homing_Offset": profile.homing_offset,
                "Min_Position_Limit": profile.range_min,
                "Max_Position_Limit": profile.range_max,
            }
            for name, value in (calibration | LEROBOT).items():
                self.write(joint, name, value)
            self.place(joint, middle_actual(FOLLOWER_PROFILE[joint]))
            self.write(joint, "Torque_Enable", 1)

    def motor(self, joint: str) -> Motor:
        return self.motors[joint]

    def place(self, joint: str, actual: float) -> None:
        physics = self.motors[joint].joint
        physics.position = physics.gear_position = actual

    def write(self, joint: str, name: str, value: int) -> None:
        register = REGISTERS[name]
        self.motors[joint].write(register.address, register.encode(value).to_bytes(register.size, "little"), self.t)

    def read(self, joint: str, name: str) -> int:
        register = REGISTERS[name]
        raw = int.from_bytes(self.motors[joint].read(register.address, register.size, self.t), "little")
        return decode_sign_magnitude(raw, register.sign_bit) if register.sign_bit is not None else raw

    def run(self, seconds: float, step_s: float = FRAME_S) -> None:
        for _ in range(round(seconds / step_s)):
            self.t += step_s
            for joint in self.motors:
                self.motors[joint].advance(self.t)


def test_a_step_goal_moves_the_joint_only_after_the_tables_latency():
    params = load_fitted()
    arm = Arm(params)
    start = arm.read("shoulder_pan", "Present_Position")
    arm.write("shoulder_pan", "Goal_Position", start + 300)
    frames = 0
    while arm.read("shoulder_pan", "Present_Position") - start < 2:
        arm.run(FRAME_S)
        frames += 1
    assert abs(frames - math.ceil(params.latency_s / FRAME_S)) <= 1
    arm.run(3.0)
    # And then it gets there, short by half the gearbox play (the output trails the gears).
    assert abs(arm.read("shoulder_pan", "Present_Position") - (start + 300)) <= params.backlash_steps / 2 + 1


def test_the_arm_sags_under_gravity_toward_increasing_steps_as_real_arms_do():
    arm = Arm(ServoParams())
    goals = {}
    for joint in ("shoulder_lift", "elbow_flex", "wrist_flex"):  # the middle of the range: forearm forward
        goals[joint] = arm.read(joint, "Present_Position")
        arm.write(joint, "Goal_Position", goals[joint])
    arm.run(2.0)
    # Real SO-101 followers hold shoulder_lift and elbow_flex above their goal in working poses.
    assert arm.read("shoulder_lift", "Present_Position") - goals["shoulder_lift"] >= 3
    assert arm.read("elbow_flex", "Present_Position") - goals["elbow_flex"] >= 3
    assert arm.read("shoulder_lift", "Present_Load") < -50  # the motor pushes back to hold the arm up
    # The sag comes from gravity: an unloaded joint holds its goal.
    assert abs(arm.read("shoulder_pan", "Present_Position") - arm.read("shoulder_pan", "Goal_Position")) <= 1


def sag_and_move(supply_v: float) -> tuple[int, int]:
    """shoulder_lift's sag at the middle of its range, and the frames shoulder_pan takes to move 600 steps."""
    arm = Arm(ServoParams(), supply_v)
    goal = arm.read("shoulder_lift", "Present_Position")
    arm.write("shoulder_lift", "Goal_Position", goal)
    start = arm.read("shoulder_pan", "Present_Position")
    arm.write("shoulder_pan", "Goal_Position", start + 600)
    frames = 0
    while arm.read("shoulder_pan", "Present_Position") < start + 590:
        arm.run(FRAME_S)
        frames += 1
    arm.run(2.0)
    return arm.read("shoulder_lift", "Present_Position") - goal, frames


def test_a_follower_on_a_lower_supply_sags_more_and_moves_slower():
    sag_12, frames_12 = sag_and_move(12.0)
    sag_7, frames_7 = sag_and_move(7.4)
    half_play = ServoParams().backlash_steps / 2  # the part of the sag the supply does not change
    # Gravity's share of the sag scales with 1/torque, so with 12/7.4; rounding to steps allows 1 step.
    assert sag_7 - half_play == pytest.approx((sag_12 - half_play) * 12.0 / 7.4, abs=1.0)
    assert frames_7 > frames_12


def test_the_gripper_stalls_short_of_its_goal_on_an_object():
    arm = Arm(ServoParams())
    gripper = arm.motor("gripper")
    for name, value in {"Max_Torque_Limit": 500, "Protection_Current": 250, "Overload_Torque": 25}.items():
        arm.write("gripper", name, value)
    open_at = arm.read("gripper", "Present_Position")
    gripper.joint.object_contact = gripper.joint.position - 150  # an object 150 steps in
    arm.write("gripper", "Goal_Position", open_at - 600)  # close hard
    arm.run(1.0)
    held = arm.read("gripper", "Present_Position")
    arm.run(0.5)
    assert arm.read("gripper", "Present_Position") == held  # stalled
    assert open_at - 600 + 100 < held < open_at - 150  # on the object, squeezing it, far from the goal
    assert 200 <= arm.read("gripper", "Present_Load") * -1 <= 500  # pushing, within the torque limit
    gripper.joint.object_contact = None
    arm.run(1.0)
    assert abs(arm.read("gripper", "Present_Position") - (open_at - 600)) <= 3  # object gone: it closes


def test_backlash_is_a_dead_band_when_the_joint_reverses():
    play = 12.0
    arm = Arm(replace(ServoParams(), backlash_steps=play))
    start = arm.read("wrist_roll", "Present_Position")  # no gravity on it
    arm.write("wrist_roll", "Goal_Position", start + 200)
    arm.run(2.0)
    forward = arm.read("wrist_roll", "Present_Position")
    arm.write("wrist_roll", "Goal_Position", start + 200 - int(play / 2))  # back by half the play
    arm.run(1.0)
    assert arm.read("wrist_roll", "Present_Position") == forward  # inside the dead band: nothing moves
    arm.write("wrist_roll", "Goal_Position", start + 200 - 3 * int(play))
    arm.run(1.0)
    moved = forward - arm.read("wrist_roll", "Present_Position")
    assert abs(moved - 2 * play) <= 2  # the first `play` steps of the reversal only cross the gap


def test_the_torque_limit_caps_the_load():
    arm = Arm(ServoParams())
    pan = arm.motor("shoulder_pan")
    arm.write("shoulder_pan", "Max_Position_Limit", 4000)  # a goal past the mechanical stop is allowed
    beyond = FOLLOWER_PROFILE["shoulder_pan"].range_max + 300
    loads = {}
    for limit in (200, 600):  # below Overload_Torque (80 %), which would cut the torque after 2 s
        arm.write("shoulder_pan", "Torque_Limit", limit)
        arm.write("shoulder_pan", "Goal_Position", beyond)
        arm.run(4.0)  # a capped drive is a slow one too
        loads[limit] = arm.read("shoulder_pan", "Present_Load")
        assert pan.joint.position == pytest.approx(pan.joint.model.stop_max)  # against the stop
        arm.write("shoulder_pan", "Goal_Position", beyond - 800)
        arm.run(1.0)
    assert loads == {200: 200, 600: 600}  # pushing as hard as the limit lets it, no harder


def test_fitted_is_the_default_and_ideal_is_what_fast_unit_tests_ask_for(clock):
    assert VirtualRigConfig().dynamics is ServoDynamics.FITTED
    rig = Path(__file__).parents[3] / "hardware_configs" / "virtual.yaml"
    assert parse_command(CalibrateConfig, [f"--config_path={rig}"]).rig.virtual.dynamics is ServoDynamics.FITTED
    # The behaviour tests of test_physics.py and test_motor.py pin `ideal` (conftest.py's model).
    config = VirtualRigConfig(timing=TimingMode.INSTANT, tremor_steps=0.0, dynamics=ServoDynamics.IDEAL)
    model = VirtualRigModel(config, clock=clock)
    assert {type(m.joint) for bus in model.buses.values() for m in bus.motors} == {JointPhysics}


def test_fitted_puts_followers_not_leaders_on_the_servo_model(clock):
    config = VirtualRigConfig(timing=TimingMode.INSTANT, tremor_steps=0.0, dynamics=ServoDynamics.FITTED)
    model = VirtualRigModel(config, clock=clock)
    assert all(isinstance(m.joint, ServoJointPhysics) for m in model.buses["left_follower"].motors)
    assert not any(isinstance(m.joint, ServoJointPhysics) for m in model.buses["left_leader"].motors)
    assert config_from_json(config_to_json(config)).dynamics is ServoDynamics.FITTED


def test_the_rig_file_option_parses_and_a_bad_value_is_one_clear_line(tmp_path: Path):
    rig = Path(__file__).parents[3] / "hardware_configs" / "virtual.yaml"
    config = parse_command(CalibrateConfig, [f"--config_path={rig}", "--rig.virtual.dynamics=ideal"])
    assert config.rig.virtual.dynamics is ServoDynamics.IDEAL
    bad = tmp_path / "rig.yaml"
    bad.write_text("virtual: {dynamics: wobbly}\n")
    with pytest.raises(UsageError) as refused:
        parse_command(CalibrateConfig, [f"--config_path={bad}", "--arms=left_follower"])
    message = str(refused.value)
    assert message == f"{bad}: `rig.virtual.dynamics`: 'wobbly' is not one of ideal, fitted"


def test_a_joint_released_while_moving_stays_where_it_was_released():
    # Torque off, the fitted model hands the joint to the ideal model's hand: gravity does not run
    # the loop on (it once did, and a follower released mid-move fell to its stop: a SIGTERM e2e).
    arm = Arm(load_fitted())
    start = arm.read("elbow_flex", "Present_Position")
    arm.write("elbow_flex", "Goal_Position", start - 400)  # against gravity
    arm.run(0.3)
    elbow = arm.motor("elbow_flex").joint
    assert abs(elbow.velocity) > 100  # still moving when released
    arm.write("elbow_flex", "Torque_Enable", 0)
    released = arm.read("elbow_flex", "Present_Position")
    arm.run(2.0)
    assert abs(arm.read("elbow_flex", "Present_Position") - released) <= 1
    assert arm.read("elbow_flex", "Present_Load") == 0


def test_the_bounds_the_table_implies_hold_on_the_model():
    # Tests elsewhere take their tolerances from these (tests/support/servo_bounds.py): they must
    # describe the model, or those tolerances would be numbers picked by hand.
    params = load_fitted()
    arm = Arm(params)
    # A goal moving steadily: the joint trails it by the latency plus the time constant.
    start = arm.read("shoulder_pan", "Present_Position")
    speed_steps_s = 300.0
    for frame in range(1, 61):
        arm.write("shoulder_pan", "Goal_Position", round(start + speed_steps_s * frame * FRAME_S))
        arm.run(FRAME_S)
    behind_s = (start + speed_steps_s * 60 * FRAME_S - arm.read("shoulder_pan", "Present_Position")) / speed_steps_s
    assert behind_s == pytest.approx(params.tracking_lag_s("shoulder_pan"), abs=FRAME_S / 2)
    # A step: there within the move time the table gives (and not in much less: it is no loose bound).
    arm.run(2.0)
    here = arm.read("shoulder_pan", "Present_Position")
    arm.write("shoulder_pan", "Goal_Position", here - 800)
    step_s = 0.002
    elapsed = 0.0
    while abs(arm.read("shoulder_pan", "Present_Position") - (here - 800)) > 5 + params.backlash_steps / 2:
        arm.run(step_s, step_s)
        elapsed += step_s
    assert 0.7 * params.move_s("shoulder_pan", 800, 5) <= elapsed <= params.move_s("shoulder_pan", 800, 5)
    # Holding the forearm out level: no further off its goal than gravity's worst pull allows.
    for joint in ("shoulder_lift", "elbow_flex"):
        profile = FOLLOWER_PROFILE[joint]
        arm.write(joint, "Goal_Position", round(middle_actual(profile) - profile.homing_offset))
    arm.run(2.0)
    for joint in ("shoulder_lift", "elbow_flex"):
        off = abs(arm.read(joint, "Present_Position") - arm.read(joint, "Goal_Position"))
        assert 3 <= off <= params.holding_offset_steps(params.worst_gravity_fraction(joint)) + 1
