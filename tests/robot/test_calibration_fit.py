"""A calibration that does not fit the arm is refused at connect, before the arm is anyone's.

Real SO-101 files from other people's arms (tests/fixtures/foreign_calibration/, LeRobot's JSON) are
put where a virtual arm's own file belongs: they load, and connect refuses them with the reason on one
line, no goal written, the motors' own calibration kept, after which the arm's own file works;
so101-doctor gives the same verdict without writing anything; where every joint reads inside the
file's ranges, the reach probe finds the stop inside one, moving no goal more than a degree a tick.
"""

import json
import shutil
import time
from pathlib import Path

import pytest
from lerobot.motors import MotorCalibration

from robot.config import BusConfig, CalibrationConfig, RigConfig
from robot.doctor.arms import check_arm, file_calibrations
from robot.doctor.rows import Status
from robot.errors import CalibrationDoesNotFitError
from robot.feetech.calibration_files import load_calibration
from robot.feetech.calibration_fit import (
    PROBE,
    RANGE_TOLERANCE_STEPS,
    new_ranges,
    outside_ranges,
    positions_under,
    short_legs,
)
from robot.feetech.range_probe import ProbeLeg, probe_reach, step_toward
from robot.feetech.so101_arm import SO101Arm
from robot.joints import JOINT_NAMES, MOTOR_IDS, Role, Side
from robot.rig import BimanualRig
from robot.virtual.config import TimingMode, VirtualRigConfig
from robot.virtual.inprocess import in_process_ports
from robot.virtual.precalibrated import calibration_file, calibration_values, write_calibration_files
from robot.virtual.rig_model import VirtualRigModel
from tests.support.bus_trace import goal_writes, present_read_before
from tests.support.commands import run, sim_client, virtual_rig_file
from tests.support.rig_files import IN_PROCESS_RIG_ID as RIG_ID

FOREIGN = Path(__file__).resolve().parents[1] / "fixtures" / "foreign_calibration"
# Each real file on a virtual arm of its role.
CASES = [
    ("left_follower", "q442333521_follower.json"),
    ("right_follower", "kevin010717_follower.json"),
    ("left_leader", "q442333521_leader.json"),
]
FOLLOWERS = ("left_follower", "right_follower")
STEP = PROBE.steps(PROBE.max_step_deg)  # the largest goal change the probe may make in a tick, steps


def install(root: Path, arm: str, text: str) -> Path:
    """`text` as `arm`'s calibration file under `root` (the rig id of tests/robot/conftest.py)."""
    path = calibration_file(root, RIG_ID, arm)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def largest_goal_step(records: list[dict]) -> int:
    """The largest change of a joint's goal between writes; the first counted from the pose read before it."""
    writes = goal_writes(records)
    assert writes, "the probe wrote no goal"
    index, first = writes[0]
    previous = present_read_before(records, index)
    assert set(previous) >= set(first), (previous, first)
    largest = 0
    for _, goals in writes:
        largest = max(largest, *(abs(goals[m] - previous[m]) for m in goals))
        previous = previous | goals
    return largest


def motor_registers(model: VirtualRigModel, arm: str) -> dict[str, tuple[int, int, int]]:
    """(homing_offset, range_min, range_max) in each motor of `arm`, as the emulator holds them."""
    states = {s["motor_id"]: s for s in model.state(arm)[arm]}
    return {
        j: (states[i]["homing_offset"], states[i]["min_position_limit"], states[i]["max_position_limit"])
        for j, i in MOTOR_IDS.items()
    }


def file_registers(values: dict) -> dict[str, tuple[int, int, int]]:
    return {j: (values[j]["homing_offset"], values[j]["range_min"], values[j]["range_max"]) for j in JOINT_NAMES}


# --- the rule on its own ---------------------------------------------------------------------------


def test_a_position_outside_a_range_is_named_with_what_was_seen():
    ranges = {"elbow_flex": (870, 3090), "wrist_flex": (840, 3200)}
    assert outside_ranges(ranges, {"elbow_flex": 3412, "wrist_flex": 2000}) == [
        "elbow_flex at 3412 is outside the file's range 870..3090"
    ]
    # A slumped joint a little past the end recorded by hand is not a misfit; further is.
    assert outside_ranges(ranges, {"elbow_flex": 870 - RANGE_TOLERANCE_STEPS, "wrist_flex": 3200}) == []
    assert len(outside_ranges(ranges, {"elbow_flex": 870 - RANGE_TOLERANCE_STEPS - 1, "wrist_flex": 3201})) == 1


def test_a_joint_that_stops_short_of_where_the_probe_sent_it_is_named():
    ranges = {"elbow_flex": (850, 3054), "gripper": (2020, 3439)}
    legs = [
        ProbeLeg("elbow_flex", start=1886, target=2057, stopped_at=1976),  # a stop inside the range
        ProbeLeg("elbow_flex", start=1886, target=1715, stopped_at=1716),
        ProbeLeg("gripper", start=2100, target=2271, stopped_at=2271 - 10),  # a joint that lags a little
    ]
    assert short_legs(legs, ranges, tolerance_steps=50) == [
        "elbow_flex stopped at 1976 on its way from 1886 to 2057, inside the file's range 850..3054"
    ]


def test_positions_under_another_homing_offset_wrap_like_the_encoder():
    # Present = actual - homing, mod 4096: the same arm read with the file's offsets instead of the motors'.
    assert positions_under({"elbow_flex": 3000}, {"elbow_flex": 1130}, {"elbow_flex": -1865}) == {"elbow_flex": 1899}
    assert positions_under({"gripper": 100}, {"gripper": 0}, {"gripper": 200}) == {"gripper": 3996}


def test_only_ranges_new_to_the_motors_are_probed_and_never_a_full_turn():
    file = load_calibration(FOREIGN / "q442333521_follower.json")
    same = dict(file)
    assert new_ranges(file, same) == []
    factory = {j: MotorCalibration(c.id, 0, 0, 0, 4095) for j, c in file.items()}
    assert new_ranges(file, factory) == list(JOINT_NAMES)  # this file records a range for wrist_roll
    full_turn = dict(file) | {"wrist_roll": MotorCalibration(5, 0, 40, 0, 4095)}
    assert "wrist_roll" not in new_ranges(full_turn, factory)


def test_a_probe_goal_never_moves_more_than_its_step():
    goal = 1000
    for target in (1400, 990, 600, 600):
        nxt = step_toward(goal, target, STEP)
        assert abs(nxt - goal) <= STEP
        goal = nxt
    assert step_toward(600, 600, STEP) == 600


# --- real files from other arms, on the virtual rig ----------------------------------------------


@pytest.mark.parametrize(("name", "foreign"), CASES)
def test_real_files_from_other_arms_load(name, foreign):
    calibration = load_calibration(FOREIGN / foreign)
    raw = json.loads((FOREIGN / foreign).read_text())
    assert set(calibration) == set(JOINT_NAMES)
    for joint, motor in calibration.items():
        assert (motor.id, motor.homing_offset, motor.range_min, motor.range_max) == (
            raw[joint]["id"],
            raw[joint]["homing_offset"],
            raw[joint]["range_min"],
            raw[joint]["range_max"],
        )


@pytest.mark.parametrize(("name", "foreign"), CASES)
def test_another_arms_file_is_refused_at_connect_and_the_arms_own_then_works(
    name, foreign, model, calibration_root, make_arm
):
    own = calibration_file(calibration_root, RIG_ID, name).read_text()
    before = motor_registers(model, name)
    path = install(calibration_root, name, (FOREIGN / foreign).read_text())
    model.trace.clear()
    with pytest.raises(CalibrationDoesNotFitError) as refused:
        make_arm(name)
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(
        f"{name.replace('_', ' ')} on inproc:{name}: this calibration does not fit this arm ({path}): "
    )
    assert message.endswith(f". Next: so101-calibrate --arms={name}")
    assert " is outside the file's range " in message
    assert not goal_writes(model.trace.records(name)), "a goal was written before the refusal"
    assert motor_registers(model, name) == before  # the refused file did not stay in the motors
    assert not any(s["torque_enabled"] for s in model.state(name)[name])

    install(calibration_root, name, own)
    arm = make_arm(name)
    assert arm.is_connected
    assert set(arm.read_joints().positions) == set(JOINT_NAMES)


def test_a_rig_with_another_arms_file_refuses_before_its_first_tick(model, ports, calibration_root):
    install(calibration_root, "right_follower", (FOREIGN / "kevin010717_follower.json").read_text())
    config = RigConfig(id=RIG_ID, calibration=CalibrationConfig(dir=calibration_root), virtual=VirtualRigConfig())
    model.trace.clear()
    rig = BimanualRig(config, ports)
    try:
        with pytest.raises(CalibrationDoesNotFitError, match=r"right follower .* does not fit this arm"):
            rig.connect()
    finally:
        rig.pool.close()
    for arm in model.buses:
        assert not goal_writes(model.trace.records(arm)), f"{arm}: a goal was written"
        assert not any(s["torque_enabled"] for s in model.state(arm)[arm]), f"{arm} kept torque"


@pytest.mark.parametrize(("name", "foreign"), CASES)
def test_so101_doctor_gives_the_verdict_connect_gives(name, foreign, model, ports, calibration_root, make_arm):
    install(calibration_root, name, (FOREIGN / foreign).read_text())
    rig = RigConfig(
        id=RIG_ID, calibration=CalibrationConfig(dir=calibration_root), bus=BusConfig(), virtual=VirtualRigConfig()
    )
    before = motor_registers(model, name)
    rows = {row.check: row for row in check_arm(name, ports[name], rig, file_calibrations(rig))}
    assert motor_registers(model, name) == before  # the doctor wrote nothing
    with pytest.raises(CalibrationDoesNotFitError) as refused:
        make_arm(name)
    row = rows["calibration"]
    assert row.status is Status.FAIL
    assert (row.detail, row.next_step) == (refused.value.problem, refused.value.next_step)


# --- the reach probe (a real-time emulator: the joints move) --------------------------------------


@pytest.fixture
def moving_rig(tmp_path):
    """A calibrated virtual rig on wall time, its arms' own files under tmp_path."""
    model = VirtualRigModel(VirtualRigConfig(timing=TimingMode.INSTANT, calibrated=True, tremor_steps=0.0))
    root = tmp_path / "calibration"
    write_calibration_files(model, root, RIG_ID)
    with in_process_ports(model) as ports:
        yield model, root, ports


def arm_on(ports: dict[str, str], root: Path, name: str) -> SO101Arm:
    side, role = Side(name.split("_")[0]), Role(name.split("_")[1])
    return SO101Arm(side, role, ports[name], rig_id=RIG_ID, calibration=CalibrationConfig(dir=root), bus=BusConfig())


def hold_inside(model: VirtualRigModel, arm: str, values: dict, margin_steps: int = 100) -> None:
    """Hold each joint (torque off: a person's hand) where the file reads it inside its range, nearest its rest pose."""
    virtual = model.arms[arm]
    for joint in JOINT_NAMES:
        homing, low, high = (values[joint][k] for k in ("homing_offset", "range_min", "range_max"))
        mechanics = virtual.motor(joint).joint

        def reads_inside(actual: float, homing: int = homing, low: int = low, high: int = high) -> bool:
            return low + margin_steps <= (round(actual) - homing) % 4096 <= high - margin_steps

        if reads_inside(mechanics.position):
            continue
        stops = range(int(mechanics.model.stop_min) + 30, int(mechanics.model.stop_max) - 30)
        actual = min((a for a in stops if reads_inside(a)), key=lambda a: abs(a - mechanics.position))
        model.operator.set_hand(arm, joint, virtual.to_fraction(joint, actual), model.clock())
    time.sleep(0.5)
    model.tick()


def test_where_every_joint_reads_inside_the_ranges_the_probe_finds_the_stop_inside_one(moving_rig):
    model, root, ports = moving_rig
    name = "left_follower"
    own = calibration_file(root, RIG_ID, name).read_text()
    foreign = json.loads((FOREIGN / "q442333521_follower.json").read_text())
    hold_inside(model, name, foreign)
    before = motor_registers(model, name)
    start = [s["actual_steps"] for s in model.state(name)[name]]
    install(root, name, json.dumps(foreign))
    model.trace.clear()
    with pytest.raises(CalibrationDoesNotFitError) as refused:
        arm_on(ports, root, name).connect()
    message = str(refused.value)
    assert " is outside the file's range" not in message  # the positions alone let it through
    assert "elbow_flex stopped at " in message
    assert message.endswith(f". Next: so101-calibrate --arms={name}")
    records = model.trace.records(name)
    assert largest_goal_step(records) <= STEP
    after = [s["actual_steps"] for s in model.state(name)[name]]
    assert all(abs(a - b) <= PROBE.steps(PROBE.reach_tolerance_deg) for a, b in zip(after, start, strict=True))
    assert motor_registers(model, name) == before

    install(root, name, own)
    arm = arm_on(ports, root, name)
    arm.connect()  # the motors kept their own calibration: nothing to write, nothing to probe
    arm.disconnect()


def test_the_arms_own_file_on_factory_motors_is_probed_and_accepted(tmp_path):
    model = VirtualRigModel(VirtualRigConfig(timing=TimingMode.INSTANT, calibrated=False, tremor_steps=1.5))
    root = tmp_path / "calibration"
    write_calibration_files(model, root, RIG_ID)
    with in_process_ports(model) as ports:
        arm = arm_on(ports, root, "right_follower")
        arm.connect()
        try:
            records = model.trace.records("right_follower")
            assert largest_goal_step(records) <= STEP
            moved = {m for _, goals in goal_writes(records) for m in goals}
            assert moved == {MOTOR_IDS[j] for j in JOINT_NAMES if j != "wrist_roll"}  # a full turn has no stops
            assert motor_registers(model, "right_follower") == file_registers(
                calibration_values(model, "right_follower")
            )
            assert all(s["torque_enabled"] for s in model.state("right_follower")["right_follower"])
        finally:
            arm.disconnect()


def test_the_probe_goes_both_ways_comes_back_and_leaves_torque_as_it_was(moving_rig):
    model, root, ports = moving_rig
    arm = arm_on(ports, root, "left_follower")
    arm.connect()
    try:
        bus = arm.device.bus
        bus.disable_torque()
        ranges = {j: (c.range_min, c.range_max) for j, c in bus.calibration.items() if j != "wrist_roll"}
        model.trace.clear()
        legs = probe_reach(bus, ranges, PROBE)
        assert short_legs(legs, ranges, PROBE.steps(PROBE.reach_tolerance_deg)) == []
        for joint in ranges:
            up, down = (leg for leg in legs if leg.joint == joint)
            assert up.target >= up.start >= down.target  # toward each end of the range
            assert up.target - up.start <= PROBE.steps(PROBE.distance_deg)
            assert ranges[joint][0] < down.target
            assert up.target < ranges[joint][1]
        assert largest_goal_step(model.trace.records("left_follower")) <= STEP
        states = {s["motor_id"]: s for s in model.state("left_follower")["left_follower"]}
        for joint in ranges:
            start = next(leg.start for leg in legs if leg.joint == joint)
            assert abs(states[MOTOR_IDS[joint]]["present_position"] - start) <= PROBE.steps(PROBE.reach_tolerance_deg)
        assert not any(s["torque_enabled"] for s in states.values())  # off before, off after
    finally:
        arm.disconnect()


# --- the command -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_so101_teleop_refuses_another_arms_file_before_its_first_tick_and_so101_calibrate_fixes_it(tmp_path):
    rig = virtual_rig_file(tmp_path, calibrated=True, timing="instant")
    foreign = tmp_path / "calibration" / "robots" / "so_follower" / "e2e_rig_left.json"
    foreign.parent.mkdir(parents=True)
    shutil.copy(FOREIGN / "q442333521_follower.json", foreign)
    teleop = ("so101-teleop", f"--config_path={rig}", "--json=true", "--virtual_operator=idle")
    with sim_client(rig) as client:
        client.trace_clear()
        refused = run(*teleop, "--duration_s=5")
        assert refused.returncode == 1, refused.stderr[-2000:]
        lines = [line for line in refused.stderr.splitlines() if "does not fit" in line]
        assert len(lines) == 1, refused.stderr[-2000:]
        assert lines[0].startswith("error: left follower on ")
        assert lines[0].endswith(f". Next: so101-calibrate --config_path={rig} --arms=left_follower")  # pastes as is
        assert refused.stdout.strip() == ""  # no summary: no tick ran
        for arm in FOLLOWERS:
            assert not goal_writes(client.trace(arm)), f"{arm}: a goal was written"

        calibrated = run("so101-calibrate", f"--config_path={rig}", "--arms=left_follower")
        assert calibrated.returncode == 0, calibrated.stderr[-2000:]
        followed = run(*teleop, "--duration_s=2")
        assert followed.returncode == 0, followed.stderr[-2000:]
        assert json.loads(followed.stdout)["ticks"] > 0
