"""The virtual rig's settings (a rig file's `virtual:` section), light enough for any config parser.

Parsing a rig file must not load the emulator (bus, motors, physics, operator): this module
imports none of it, and the emulator imports its settings from here.
"""

import json
import os
import tempfile
import zlib
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path

from robot.config_checks import reject_non_finite
from robot.joints import ARM_NAMES


class TimingMode(StrEnum):
    """How long the emulated bus takes to answer."""

    INSTANT = "instant"
    WIRE = "wire"
    USB = "usb"


class ServoDynamics(StrEnum):
    """How the emulated followers' servos move toward their goals."""

    IDEAL = "ideal"  # an ideal position servo: speed and acceleration caps and a short first-order lag
    FITTED = "fitted"  # the STS3215's own loop fitted to real SO-101 arms (robot/virtual/servo_params.py)


class VirtualOperator(StrEnum):
    """What the virtual rig's scripted hands do on the leaders (`--virtual_operator` of sim, teleop, record)."""

    CLOTH_FOLD = "cloth_fold"  # the cloth-fold demonstration, looped
    # Per episode: the table tidied with the cloth at the episode's seeded pose, and the hands clamp,
    # fold, press and drag it aside from where it lies (robot/cameras/virtual/fold_task.py)
    FOLD_TASK = "fold_task"
    IDLE = "idle"  # nothing: the leaders rest where they are


@dataclass(frozen=True)
class VirtualRigConfig:
    """How the emulated arms behave; part of a rig YAML file's `virtual:` section."""

    runtime_dir: Path | None = None  # pty links and control socket; default $XDG_RUNTIME_DIR/so101-virtual
    state_dir: Path | None = None  # where motor EEPROM persists between runs (like real arms); None: not kept
    timing: TimingMode = TimingMode.WIRE  # instant, wire (1 Mbps wire time) or usb (wire + adapter latency)
    usb_latency_ms: float = 1.0  # usb timing: host-adapter latency per reply, ms
    # How the followers move: fitted (lag, gravity sag, backlash, a compliant grip, as real SO-101
    # followers show in recordings; robot/virtual/servo_params.py) or ideal (an ideal position servo
    # for fast unit tests: it tracks its goal within a tick or two).
    dynamics: ServoDynamics = ServoDynamics.FITTED
    # The followers' own fitted servo tables: a JSON file that so101-fit writes, when asked to, from a
    # recording of this person's arms, one table per arm (an arm it does not name uses the committed
    # fit). None: the committed fit for both, robot/virtual/servo_fitted.json.
    servo_table: Path | None = None
    scenario: Path | None = None  # YAML file of fault rules to install at start
    seed: int = 0  # seeds per-arm variation and hand tremor
    tremor_steps: float = 1.5  # operator hand noise amplitude, encoder steps
    # Share of the operator's task demonstrations that fail (a missed grasp or an incomplete fold),
    # so that a recorded dataset is not all successes, as no person's is
    task_failure_rate: float = 0.15
    # The operator plans the task for the middle of the cloth's range, wherever it lies, at the nominal
    # pace and never failing: the mean demonstration, open loop (the blind baseline of
    # benchmarks/learning_loop.py, what a policy that ignores its cameras could do at best)
    operator_blind: bool = False
    # Start with every motor calibrated, as if so101-calibrate had run before (commands then write
    # the matching LeRobot files where none exist). False: factory-fresh motors.
    calibrated: bool = False
    # Brand-new arms, as they come out of the box: every motor answers as ID 1 at 1 Mbps (so only
    # so101-setup can tell them apart), nothing is calibrated, and the four USB adapters are unplugged
    # until plugged in one at a time (the control socket's `reopen`), under anonymous ttyACM<n> names
    # in a seeded order, so a person or a test must find which port is which arm.
    factory_new: bool = False
    # The voltage the followers' supply gives, V: 12 like the kit's 12 V adapter. 7.4 shows a 5 V
    # build or a missing 12 V supply to so101-doctor (the rig file's `power`); leaders are always on 5.
    follower_supply_v: float = 12.0
    # SCHED_FIFO priority of the emulator processes when permitted (0: never). Real buses are not
    # slowed by the host's load, so neither are the emulated ones: the default is one above the rig's
    # loop (10), and so above its bus and camera threads (9). A rig file that left it out got
    # emulators at normal priority, which a busy machine silenced for 6 reads in a row (200 ms) while
    # three 640x480 cameras were encoded in AV1 (tests/test_record_e2e.py).
    realtime_priority: int = 11

    def __post_init__(self) -> None:
        reject_non_finite(self, "virtual")
        if self.usb_latency_ms < 0:
            raise ValueError(f"virtual.usb_latency_ms={self.usb_latency_ms}: must be >= 0")
        if self.tremor_steps < 0:
            raise ValueError(f"virtual.tremor_steps={self.tremor_steps}: must be >= 0")
        if not 0.0 <= self.task_failure_rate <= 1.0:
            raise ValueError(f"virtual.task_failure_rate={self.task_failure_rate}: must be within 0..1")
        if self.factory_new and self.calibrated:
            raise ValueError("virtual.factory_new=true and virtual.calibrated=true: new motors are not calibrated")
        if self.servo_table is not None and not Path(self.servo_table).is_file():
            raise ValueError(
                f"virtual.servo_table={self.servo_table}: no such file. Next: write it with so101-fit"
                " --dataset.root=<recording> --config_path=<this rig file> --write=true, or remove the line"
            )
        if not self.follower_supply_v > 0:
            raise ValueError(f"virtual.follower_supply_v={self.follower_supply_v}: must be > 0 (volts)")


def default_runtime_dir() -> Path:
    """Where the pty links and the control socket live when the config does not say."""
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    suffix = "" if os.environ.get("XDG_RUNTIME_DIR") else f"-{os.getuid()}"
    return Path(base) / f"so101-virtual{suffix}"


def config_to_json(config: VirtualRigConfig) -> str:
    """Serialise a config for the server process's command line."""
    return json.dumps({k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(config).items()})


def config_from_json(text: str) -> VirtualRigConfig:
    """Inverse of `config_to_json`."""
    raw = json.loads(text)
    for key in ("runtime_dir", "state_dir", "scenario", "servo_table"):
        if raw.get(key) is not None:
            raw[key] = Path(raw[key])
    if "timing" in raw:
        raw["timing"] = TimingMode(raw["timing"])
    if "dynamics" in raw:
        raw["dynamics"] = ServoDynamics(raw["dynamics"])
    return VirtualRigConfig(**raw)


def link_names(config: VirtualRigConfig) -> dict[str, str]:
    """Each bus's pty link name in the runtime dir: the arm's name, or ttyACM<n> for factory-new arms.

    Out of the box nothing says which adapter is which arm: the names are handed out in an order
    seeded by `config.seed`, as the kernel numbers adapters in the order they were plugged in.
    """
    if not config.factory_new:
        return {bus: bus for bus in ARM_NAMES}
    order = sorted(ARM_NAMES, key=lambda bus: zlib.crc32(f"{config.seed}:{bus}".encode()))
    return {bus: f"ttyACM{order.index(bus)}" for bus in ARM_NAMES}
