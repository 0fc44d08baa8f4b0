"""The virtual rig's settings (a rig file's `virtual:` section), light enough for any config parser.

Parsing a rig file must not load the emulator (bus, motors, physics, operator): this module
imports none of it, and the emulator imports its settings from here.
"""

import json
import os
import tempfile
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path

from robot.config_checks import reject_non_finite


class TimingMode(StrEnum):
    """How long the emulated bus takes to answer."""

    INSTANT = "instant"
    WIRE = "wire"
    USB = "usb"


class VirtualOperator(StrEnum):
    """What the virtual rig's scripted hands do on the leaders (`--virtual_operator` of sim, teleop, record)."""

    CLOTH_FOLD = "cloth_fold"  # the cloth-fold demonstration, looped
    IDLE = "idle"  # nothing: the leaders rest where they are


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
    for key in ("runtime_dir", "state_dir", "scenario"):
        if raw.get(key) is not None:
            raw[key] = Path(raw[key])
    if "timing" in raw:
        raw["timing"] = TimingMode(raw["timing"])
    return VirtualRigConfig(**raw)
