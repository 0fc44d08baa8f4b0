"""The virtual rig: four buses (two leaders, two followers), the operator, faults, trace, flash.

Transport-free like the buses it holds: a transport calls `feed(bus, data, t)` and delivers the
returned emissions; the control API calls the other methods. Not thread-safe: one owner thread
(the pseudo-terminal server's loop, or the in-process serial's caller) drives it.
"""

import json
import logging
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from robot.config_checks import reject_non_finite
from robot.feetech.sts3215 import EEPROM_END
from robot.joints import ARM_NAMES, GRIPPER, JOINT_NAMES, Role, Side
from robot.virtual.arms import arm_profiles, build_motors, calibration_pose
from robot.virtual.bus import Emission, TimingConfig, TimingMode, VirtualBus
from robot.virtual.faults import FaultRule, load_scenario
from robot.virtual.operator import CLOTH_CONTACT_FRACTION, ScriptedOperator, VirtualArm
from robot.virtual.precalibrated import write_motor_calibration
from robot.virtual.trace import Trace
from robot.virtual.trajectories import Trajectory, calibration_sweep, cloth_fold, to_pose

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class VirtualRigConfig:
    """How the emulated arms behave; part of a rig YAML file's `virtual:` section."""

    runtime_dir: Path | None = None  # pty links and control socket; default $XDG_RUNTIME_DIR/so101-virtual
    state_dir: Path | None = None  # where motor EEPROM persists between runs (like real arms); None: not kept
    timing: TimingMode = TimingMode.WIRE  # instant, wire (1 Mbps wire time) or usb (wire + adapter latency)
    usb_latency_ms: float = 1.0  # usb timing: host-adapter latency per reply, ms
    scenario: Path | None = None  # YAML file of fault rules to install at start
    seed: int = 0  # seeds per-arm variation and hand tremor
    tremor_steps: float = 1.5  # operator hand noise amplitude, encoder steps
    # Start with every motor calibrated, as if so101-calibrate had run before (commands then write
    # the matching LeRobot files where none exist). False: factory-fresh motors.
    calibrated: bool = False
    # SCHED_FIFO priority of the emulator process when permitted (0: never). Real buses are not
    # slowed by the host's load; at real-time priority the emulated ones are not either.
    realtime_priority: int = 0

    def __post_init__(self) -> None:
        reject_non_finite(self, "virtual")
        if self.usb_latency_ms < 0:
            raise ValueError(f"virtual.usb_latency_ms={self.usb_latency_ms}: must be >= 0")
        if self.tremor_steps < 0:
            raise ValueError(f"virtual.tremor_steps={self.tremor_steps}: must be >= 0")


def default_runtime_dir() -> Path:
    """Where the pty links and the control socket live when the config does not say."""
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    suffix = "" if os.environ.get("XDG_RUNTIME_DIR") else f"-{os.getuid()}"
    return Path(base) / f"so101-virtual{suffix}"


# Set by the launcher for the server process: the pid it must not outlive (see `die_with_parent`).
LAUNCHER_PID_ENV = "SO101_VIRTUAL_LAUNCHER_PID"


def config_to_json(config: VirtualRigConfig) -> str:
    """Serialise a config for the server process's command line."""
    return json.dumps({k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(config).items()})


def config_from_json(text: str) -> VirtualRigConfig:
    """Inverse of `config_to_json`."""
    raw = json.loads(text)
    for key in ("runtime_dir", "state_dir", "scenario"):
        if raw.get(key) is not None:
            raw[key] = Path(raw[key])
    if "timing" in raw:
        raw["timing"] = TimingMode(raw["timing"])
    return VirtualRigConfig(**raw)


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
        self.buses: dict[str, VirtualBus] = {}
        arms: dict[str, VirtualArm] = {}
        for name in ARM_NAMES:
            role = _role(name)
            profiles = arm_profiles(name, role, config.seed)
            motors = build_motors(profiles, role, t0)
            self.buses[name] = VirtualBus(name, motors, timing=timing, faults=self.faults, trace=self.trace)
            arms[name] = VirtualArm(name, motors, profiles)
        self.arms = arms
        self.operator = ScriptedOperator(arms, seed=config.seed, tremor_steps=config.tremor_steps, moved=served)
        if config.calibrated:
            write_motor_calibration(self)
        self._load_flash()

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
        """A named trajectory: `calibration_pose`, `calibration_sweep` or `cloth_fold`."""
        selected = arms or list(self.arms)
        unknown = [a for a in selected if a not in self.arms]
        if unknown:
            raise ValueError(f"unknown arms {unknown}; expected names from {list(self.arms)}")
        match name:
            case "calibration_pose":
                return to_pose(selected, {a: self.middle_fractions(a) for a in selected}, move_s=1.5)
            case "calibration_sweep":
                return calibration_sweep(selected, {a: self.middle_fractions(a) for a in selected})
            case "cloth_fold":
                leaders = {Side.LEFT: "left_leader", Side.RIGHT: "right_leader"}
                followers = {Side.LEFT: "left_follower", Side.RIGHT: "right_follower"}
                return cloth_fold(leaders, followers)
        raise ValueError(f"unknown trajectory {name!r}; expected calibration_pose, calibration_sweep or cloth_fold")

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
