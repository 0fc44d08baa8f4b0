"""Rig configuration: frozen dataclasses parsed once at the entry point from `hardware_configs/*.yaml`.

Each field says what it is for and its unit; validation names the field, the value and what is
allowed. `hardware_configs/README.md` explains every field and how to find its value.
"""

import math
import re
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path

from robot.cameras.config import CameraConfig
from robot.cameras.sync import SyncConfig
from robot.config_checks import reject_non_finite
from robot.errors import ConfigError
from robot.joints import ARM_NAMES, Role
from robot.safety.config import SafetyConfig
from robot.virtual.config import VirtualRigConfig, default_runtime_dir

VIRTUAL_PORT = "virtual"
REPO_ROOT = Path(__file__).resolve().parents[1]
HARDWARE_CONFIGS = REPO_ROOT / "hardware_configs"
DEFAULT_RIG_FILE = HARDWARE_CONFIGS / "virtual.yaml"
_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
MAX_FPS = 200  # the fastest control rate a rig may ask for, Hz (the servo bus tops out near 250 Hz for 4 arms)


@dataclass(frozen=True)
class PortsConfig:
    """Serial ports of the four arms."""

    # Left follower's serial device, stable across reboots: /dev/serial/by-id/usb-1a86_..._<serial>-if00.
    # "virtual" means the virtual rig's emulated bus.
    left_follower: str = VIRTUAL_PORT
    # Right follower's serial device.
    right_follower: str = VIRTUAL_PORT
    # Left leader's serial device; empty for a rig without leaders (policy rollouts only).
    left_leader: str = VIRTUAL_PORT
    # Right leader's serial device; empty for a rig without leaders.
    right_leader: str = VIRTUAL_PORT

    def by_arm(self) -> dict[str, str]:
        """Arm name -> port, leaving out absent leaders."""
        ports = {name: getattr(self, name) for name in ARM_NAMES}
        return {name: port for name, port in ports.items() if port}


@dataclass(frozen=True)
class BusConfig:
    """Timing of bus transactions on the 30 Hz path."""

    # How long one attempt waits for a motor's status packet, ms (LeRobot waits 50; a healthy
    # arm answers in under 5 including USB latency).
    reply_timeout_ms: float = 10.0
    # Budget for one read on the control path, retries included, ms. A silent motor costs at most
    # this much of a 33 ms tick before a typed error names it.
    read_deadline_ms: float = 25.0
    # How often to read each motor's Status, temperature, load and voltage, s (sync reads drop
    # error bits, so this is how overload and overheat get noticed). 0 turns polling off.
    status_poll_period_s: float = 0.5

    def __post_init__(self) -> None:
        reject_non_finite(self, "bus")
        if not 0 < self.reply_timeout_ms <= 1000:
            raise ConfigError(f"bus.reply_timeout_ms={self.reply_timeout_ms}: expected 0 < value <= 1000")
        if self.read_deadline_ms < self.reply_timeout_ms:
            raise ConfigError(
                f"bus.read_deadline_ms={self.read_deadline_ms}: must be >= bus.reply_timeout_ms"
                f" ({self.reply_timeout_ms}) so at least one attempt fits"
            )
        if self.status_poll_period_s < 0:
            raise ConfigError(f"bus.status_poll_period_s={self.status_poll_period_s}: must be >= 0")


class MismatchPolicy(StrEnum):
    """What to do when the motors' calibration registers differ from the calibration file."""

    WRITE_FILE = "write_file"  # write the file's values to the motors (LeRobot's "press ENTER")
    FAIL = "fail"  # stop and ask for so101-calibrate


class PowerProfile(StrEnum):
    """The followers' motors and their supply (the rig file's `power`).

    Leaders are always 7.4 V STS3215 motors on a 5 V supply, whatever the profile.
    """

    # 12 V STS3215 followers (the SO-101 kit's) on a 12 V supply: the motors report 10.5-13.5 V.
    V12 = "12v"
    # Followers built with 7.4 V STS3215 motors on a 5 V supply, like leaders: they report roughly
    # 4.5-8.4 V (a 12 V supply would be above their rating).
    V5 = "5v"

    @classmethod
    def _missing_(cls, value: object) -> "PowerProfile | None":
        """`12V`, `12 v` and a bare `12` (YAML reads `power: 12` as a number) mean `12v`."""
        text = str(value).strip().lower().replace(" ", "")
        text = text if text.endswith("v") else f"{text}v"
        return next((member for member in cls if member.value == text), None)


@dataclass(frozen=True)
class CalibrationConfig:
    """Where calibration files live, in LeRobot's format and layout."""

    # Root of the calibration files; None means LeRobot's default ($HF_LEROBOT_CALIBRATION,
    # ~/.cache/huggingface/lerobot/calibration). Followers: <dir>/robots/so_follower/<id>_<side>.json,
    # leaders: <dir>/teleoperators/so_leader/<id>_<side>.json, exactly as LeRobot's bimanual classes.
    dir: Path | None = None
    # When motors disagree with the file at connect: write_file (the usual answer) or fail.
    on_mismatch: MismatchPolicy = MismatchPolicy.WRITE_FILE


@dataclass(frozen=True)
class RigConfig:
    """A bimanual SO-101 rig: four arms, their calibration, bus timing, optionally emulated."""

    # Rig id: calibration files are <id>_left.json and <id>_right.json (LeRobot's bimanual naming).
    id: str = "so101_bimanual"
    # The control rate, Hz: the loop, status line, dataset, engines, rest move and guard all read it
    # here. Every camera must deliver at least this many frames a second, in a whole multiple of it.
    fps: int = 30
    # The followers' motors and supply: 12v (12 V STS3215 on a 12 V supply, the kit's) or 5v (7.4 V
    # STS3215 on a 5 V supply). so101-doctor checks the voltage the motors report against it.
    power: PowerProfile = PowerProfile.V12
    ports: PortsConfig = field(default_factory=PortsConfig)
    calibration: CalibrationConfig = field(default_factory=CalibrationConfig)
    bus: BusConfig = field(default_factory=BusConfig)
    safety: SafetyConfig = field(default_factory=SafetyConfig)
    # Cameras, each `kind: opencv` (a USB camera) or `kind: virtual` (rendered from the followers);
    # names become dataset keys: observation.images.<name>.
    cameras: tuple[CameraConfig, ...] = ()
    # How each control tick is matched to one frame per camera.
    sync: SyncConfig = field(default_factory=SyncConfig)
    # SCHED_FIFO priority of the control and bus threads when the system permits (root, or an
    # rtprio limit); 0 never asks. Keeps 30 Hz deadlines while an encoder loads both cores.
    realtime_priority: int = 10
    # The virtual rig (emulated arms): required when any port is "virtual", absent for real arms.
    virtual: VirtualRigConfig | None = None

    def __post_init__(self) -> None:
        if not _ID_PATTERN.match(self.id):
            raise ConfigError(f"id={self.id!r}: use letters, digits, '_', '-' or '.', starting with a letter or digit")
        ports = self.ports.by_arm()
        for name in (f"{side}_{Role.FOLLOWER}" for side in ("left", "right")):
            if name not in ports:
                raise ConfigError(f"ports.{name} is empty: a rig needs both followers")
        if isinstance(self.fps, bool) or not isinstance(self.fps, int) or not 1 <= self.fps <= MAX_FPS:
            raise ConfigError(f"fps={self.fps!r}: expected a whole number of control ticks a second, 1..{MAX_FPS}")
        for camera in self.cameras:
            _check_camera_rate(camera, self.fps)
        try:
            object.__setattr__(self, "power", PowerProfile(self.power))
        except ValueError:
            raise ConfigError(
                f"power={self.power!r}: expected 12v (12 V followers on a 12 V supply)"
                " or 5v (followers built with 7.4 V motors, on a 5 V supply)"
            ) from None
        if not 0 <= self.realtime_priority <= 99:
            raise ConfigError(f"realtime_priority={self.realtime_priority}: expected 0 (off) to 99")
        names = [camera.name for camera in self.cameras]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ConfigError(f"cameras: the name(s) {duplicates} are used twice; each camera needs its own name")
        # On a virtual rig a port is `virtual` (its emulated bus) or one of the emulator's links (the
        # anonymous ttyACM<n> of factory-new arms, as so101-ports writes them).
        links = str(self.virtual.runtime_dir or default_runtime_dir()) + "/" if self.virtual else None
        virtual_ports = [
            name for name, port in ports.items() if port == VIRTUAL_PORT or (links and port.startswith(links))
        ]
        if virtual_ports and self.virtual is None:
            raise ConfigError(
                f"ports {', '.join(virtual_ports)} are 'virtual' but the file has no `virtual:` section;"
                " add one (see hardware_configs/virtual.yaml) or give real device paths"
            )
        if self.virtual is not None and len(virtual_ports) != len(ports):
            real = sorted(set(ports) - set(virtual_ports))
            raise ConfigError(
                f"the file has a `virtual:` section but ports {', '.join(real)} are real devices;"
                " mixing emulated and real arms is not supported: set them to 'virtual' or drop `virtual:`"
            )

    def at_fps(self, fps: int | None) -> "RigConfig":
        """This rig at another control rate (so101-replay's `--fps`), checked against the cameras; None keeps it."""
        return self if fps is None or fps == self.fps else replace(self, fps=fps)

    @property
    def is_virtual(self) -> bool:
        """Whether the arms are emulated."""
        return self.virtual is not None


def _check_camera_rate(camera: CameraConfig, fps: int) -> None:
    """Refuse a camera that cannot give every tick of an `fps` loop a new frame, in step with it."""
    ratio = camera.fps / fps
    if ratio >= 1 - 1e-6 and abs(ratio - round(ratio)) < 1e-6:
        return
    divisors = [rate for rate in range(min(fps, math.floor(camera.fps)), 0, -1) if camera.fps % rate == 0]
    slower = f"`fps: {divisors[0]}`" if divisors else "a lower `fps`"
    raise ConfigError(
        # Named by the rig's `fps` first: set on the command line (`--rig.fps`), the error says so.
        f"fps={fps}: cameras.{camera.name} at {camera.fps:g} fps cannot feed a {fps} Hz control loop"
        " (each tick needs a new frame, and the camera's rate must be a whole multiple of the loop's)."
        f" Next: set the rig's {slower},"
        f" or the camera's `fps: {fps}` if it can run that fast"
    )
