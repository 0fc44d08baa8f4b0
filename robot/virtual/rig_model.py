"""The virtual rig: four buses (two leaders, two followers), the operator, faults, trace, flash.

Transport-free like the buses it holds: a transport calls `feed(bus, data, t)` and delivers the
returned emissions; the control API calls the other methods. Not thread-safe: one owner thread
(the pseudo-terminal server's loop, or the in-process serial's caller) drives it.
"""

import json
import logging
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from robot.feetech.sts3215 import EEPROM_END, REGISTERS
from robot.joints import ARM_NAMES, GRIPPER, JOINT_NAMES, Role, Side, arm_name
from robot.virtual.arms import build_motors
from robot.virtual.bus import Emission, TimingConfig, VirtualBus
from robot.virtual.config import ServoDynamics, TimingMode, VirtualRigConfig
from robot.virtual.faults import FaultRule, load_scenario
from robot.virtual.operator import CLOTH_CONTACT_FRACTION, ScriptedOperator, VirtualArm
from robot.virtual.precalibrated import calibration_values
from robot.virtual.profiles import arm_profiles, calibration_pose
from robot.virtual.servo_table import arm_params, arm_supply_v
from robot.virtual.trace import Trace
from robot.virtual.trajectories import Trajectory, calibration_sweep, cloth_fold, correction, performed, to_pose

logger = logging.getLogger(__name__)


# Calibration register -> its key in LeRobot's calibration values.
_CALIBRATION_REGISTERS = (
    ("Homing_Offset", "homing_offset"),
    ("Min_Position_Limit", "range_min"),
    ("Max_Position_Limit", "range_max"),
)


def _role(arm: str) -> Role:
    return Role.LEADER if arm.endswith(Role.LEADER) else Role.FOLLOWER


class VirtualRigModel:
    """Everything the emulator process serves, without any transport."""

    def __init__(
        self, config: VirtualRigConfig, clock: Callable[[], float] = time.monotonic, served: list[str] | None = None
    ) -> None:
        """The whole rig's state; `served` names the buses it answers for (default all).

        A process that serves one bus moves only that arm's hands and mechanics: simulating the
        other three as well made every reply cost four arms' physics (0.7 ms of CPU per sync read,
        with four such processes on two cores).
        """
        self.config = config
        self.clock = clock
        self.trace = Trace()
        self.faults: list[FaultRule] = []
        timing = TimingConfig(mode=TimingMode(config.timing), usb_latency_ms=config.usb_latency_ms)
        t0 = clock()
        dynamics = ServoDynamics(config.dynamics)
        self.buses: dict[str, VirtualBus] = {}
        arms: dict[str, VirtualArm] = {}
        for name in ARM_NAMES:
            role = _role(name)
            profiles = arm_profiles(name, role, config.seed)
            supply_v, params = None, None
            if role is Role.FOLLOWER:  # each follower under its own fitted table, where the rig has one
                supply_v = arm_supply_v(config.servo_table, name, config.follower_supply_v)
                params = arm_params(config.servo_table, name) if dynamics is ServoDynamics.FITTED else None
            motors = build_motors(profiles, role, t0, supply_v, dynamics, params)
            self.buses[name] = VirtualBus(name, motors, timing=timing, faults=self.faults, trace=self.trace)
            arms[name] = VirtualArm(name, motors, profiles)
        self.arms = arms
        self.operator = ScriptedOperator(arms, seed=config.seed, tremor_steps=config.tremor_steps, moved=served)
        if config.calibrated:
            self._write_motor_calibration()
        if config.factory_new:
            self._factory_ids()
        self._load_flash()  # a state_dir's saved flash wins: a set-up arm stays set up

    # --- transport entry point -----------------------------------------------------------

    def feed(self, bus: str, data: bytes, t_s: float | None = None) -> list[Emission]:
        """Host bytes for `bus`; returns the emissions to deliver."""
        t = self.clock() if t_s is None else t_s
        self.operator.apply(t)
        return self.buses[bus].feed(data, t)

    def tick(self, t_s: float | None = None, buses: list[str] | None = None) -> None:
        """Move hands and mechanics to `t_s` with no packet (keeps catch-up work per packet small)."""
        t = self.clock() if t_s is None else t_s
        self.operator.apply(t)
        for name in buses or list(self.buses):
            self.buses[name].advance(t)

    def _write_motor_calibration(self) -> None:
        """Put every arm's calibration into its motors' EEPROM flash (as if written with Lock 0)."""
        for arm, bus in self.buses.items():
            values = calibration_values(self, arm)
            for joint, motor in zip(JOINT_NAMES, bus.motors, strict=True):
                flash = bytearray(motor.flash)
                for name, key in _CALIBRATION_REGISTERS:
                    register = REGISTERS[name]
                    raw = register.encode(values[joint][key])
                    flash[register.address : register.address + register.size] = raw.to_bytes(register.size, "little")
                # LeRobot's configure() ran at some earlier connect too: no 500 µs return delay.
                flash[REGISTERS["Return_Delay_Time"].address] = 0
                motor.load_flash(bytes(flash))

    def _factory_ids(self) -> None:
        """Every motor answers as ID 1, as every new STS3215 does (and stays so until so101-setup)."""
        address = REGISTERS["ID"].address
        for bus in self.buses.values():
            for motor in bus.motors:
                motor.poke(address, bytes([1]))

    # --- scenarios and persistence ---------------------------------------------------------

    def install_scenario(self, path: Path) -> int:
        """Add the fault rules of a YAML scenario file; returns how many."""
        rules = load_scenario(path)
        self.faults.extend(rules)
        return len(rules)

    def _flash_path(self, bus: str) -> Path | None:
        return self.config.state_dir / f"flash-{bus}.json" if self.config.state_dir else None

    def _load_flash(self) -> None:
        for bus_name, bus in self.buses.items():
            path = self._flash_path(bus_name)
            if path is None or not path.is_file():
                continue
            try:
                saved = json.loads(path.read_text())
                for motor, flash_hex in zip(bus.motors, saved, strict=True):
                    motor.load_flash(bytes.fromhex(flash_hex))
            except (ValueError, OSError) as e:
                logger.warning("ignoring unreadable virtual motor flash %s (%s); motors start factory-fresh", path, e)

    def save_flash(self, buses: list[str] | None = None) -> None:
        """Persist the motors' EEPROM flash of `buses` (default all) to `state_dir` (no-op without one)."""
        for name in buses or list(self.buses):
            path = self._flash_path(name)
            if path is None:
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps([m.flash.hex() for m in self.buses[name].motors]))
            tmp.replace(path)

    def flash_signature(self, buses: list[str] | None = None) -> str:
        """A cheap fingerprint of the flash contents, to save only when something changed."""
        names = buses or list(self.buses)
        return "".join(m.flash[:EEPROM_END].hex() for name in names for m in self.buses[name].motors)

    # --- the operator --------------------------------------------------------------------

    def middle_fractions(self, arm: str) -> dict[str, float]:
        """Each joint's calibration ('middle') pose as a fraction of its range."""
        virtual_arm = self.arms[arm]
        return {j: virtual_arm.to_fraction(j, calibration_pose(virtual_arm.profiles[j])) for j in JOINT_NAMES}

    def trajectory(self, name: str, arms: list[str] | None = None) -> Trajectory:
        """A named trajectory: `calibration_pose`, `calibration_sweep`, `correction` or `cloth_fold`."""
        selected = arms or list(self.arms)
        unknown = [a for a in selected if a not in self.arms]
        if unknown:
            raise ValueError(f"unknown arms {unknown}; expected names from {list(self.arms)}")
        match name:
            case "calibration_pose":
                return to_pose(selected, {a: self.middle_fractions(a) for a in selected}, move_s=1.5)
            case "calibration_sweep":
                return calibration_sweep(selected, {a: self.middle_fractions(a) for a in selected})
            case "correction":
                return correction(selected)
            case "cloth_fold":
                leaders = {Side.LEFT: "left_leader", Side.RIGHT: "right_leader"}
                followers = {Side.LEFT: "left_follower", Side.RIGHT: "right_follower"}
                return cloth_fold(leaders, followers)
        raise ValueError(
            f"unknown trajectory {name!r}; expected calibration_pose, calibration_sweep, correction or cloth_fold"
        )

    def goal_fraction(self, arm: str, joint: str, value: float) -> float:
        """A LeRobot goal for `joint` of `arm` (degrees; the gripper 0..100) as a fraction of its range.

        As LeRobot reads the arm's calibration: degrees count from the middle of the calibrated range,
        4,095 steps a turn; the gripper spans the range 0..100.
        """
        calibration = calibration_values(self, arm)[joint]
        low, high = calibration["range_min"], calibration["range_max"]
        gripper = low + value / 100.0 * (high - low)
        homed = gripper if joint == GRIPPER else (low + high) / 2 + value * 4095 / 360
        return self.arms[arm].to_fraction(joint, homed + calibration["homing_offset"])

    def performed(self, plan: dict[str, object]) -> Trajectory:
        """A task plan of follower goals (robot/cameras/virtual/fold_task.py) for the leaders' hands."""
        leaders = {side: arm_name(side, Role.LEADER) for side in Side}
        followers = {side: arm_name(side, Role.FOLLOWER) for side in Side}
        return performed(plan, self.goal_fraction, leaders, followers)

    def set_object(self, arm: str, holding: bool) -> None:
        """Put the cloth between a follower's jaws (or take it away)."""
        virtual_arm = self.arms[arm]
        gripper = virtual_arm.motor(GRIPPER)
        gripper.advance(self.clock())
        contact = virtual_arm.to_actual(GRIPPER, CLOTH_CONTACT_FRACTION) if holding else None
        gripper.joint.object_contact = contact

    # --- state ---------------------------------------------------------------------------

    def state(self, bus: str | None = None) -> dict[str, list[dict[str, object]]]:
        """Snapshots of every motor (or of one bus), for the control API."""
        t = self.clock()
        self.operator.apply(t)
        names = [bus] if bus else list(self.buses)
        return {name: [asdict(m.state(t)) for m in self.buses[name].motors] for name in names}
