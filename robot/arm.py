"""The Arm seam: what every loop needs from one SO-101 arm, real or emulated.

Positions are in LeRobot's units (see `robot.joints`): degrees for body joints, 0..100 for the
gripper, keyed by joint name.
"""

from dataclasses import dataclass
from typing import Protocol

from robot.feetech.sts3215 import ErrorBit
from robot.joints import Role, Side

# One arm's joints by name (degrees; the gripper in percent): what its bus reads and is sent. Both
# arms at once are a JointValues (robot/joint_values.py).
JointPositions = dict[str, float]


@dataclass(frozen=True)
class JointReading:
    """Joint positions read from the bus, with when and how they were read."""

    positions: JointPositions
    t_s: float  # monotonic time at the middle of the bus transaction, s
    bus_time_s: float  # how long the read took, retries included, s
    attempts: int  # 1 when the first try succeeded


@dataclass(frozen=True)
class MotorHealth:
    """One motor's status registers."""

    error_bits: int  # ErrorBit flags from the Status register
    temperature_c: float
    load_percent: float  # signed, % of maximum torque
    voltage_v: float

    @property
    def errors(self) -> list[str]:
        """Names of the error bits that are set, e.g. ["overload"]."""
        return [bit.name.lower() for bit in ErrorBit if self.error_bits & bit and bit.name]


@dataclass(frozen=True)
class ArmHealth:
    """Status of every motor of an arm at one moment."""

    motors: dict[str, MotorHealth]  # joint name -> health
    t_s: float  # monotonic time of the read, s

    @property
    def faults(self) -> dict[str, list[str]]:
        """Joint -> error names, for the motors that report any."""
        return {joint: h.errors for joint, h in self.motors.items() if h.error_bits}

    @property
    def max_temperature_c(self) -> float:
        """The hottest motor's temperature."""
        return max(h.temperature_c for h in self.motors.values())


class Arm(Protocol):
    """One SO-101 arm: connect, read joints, write joints, disconnect."""

    side: Side
    role: Role

    @property
    def name(self) -> str:
        """e.g. "left_follower"."""
        ...

    def connect(self) -> None:
        """Open the bus, check the motors and calibration, configure them."""
        ...

    def disconnect(self, *, release_torque: bool = True) -> None:
        """Close the bus; by default with torque released."""
        ...

    def read_joints(self) -> JointReading:
        """Present positions of all joints."""
        ...

    def write_joints(self, goal: JointPositions) -> JointPositions:
        """Command goal positions; returns what was actually sent (after clamping and rounding)."""
        ...

    def read_health(self) -> ArmHealth:
        """Error bits, temperature, load and voltage of every motor."""
        ...
