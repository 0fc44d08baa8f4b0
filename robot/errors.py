"""Errors of the hardware layer. Each names the device (side, role, port, motor) and the next step.

RobotError                       (robot/shell/errors.py's CommandError: one line for the user)
├── ConfigError                  a rig file or option is wrong
├── ArmConnectionError           the arm's port cannot be used
│   ├── PortNotFoundError        no such device
│   ├── NotAServoBusError        a device, but no servo answers
│   └── BusDisconnectedError     the port went away while in use
├── MotorError                   one motor misbehaves
│   ├── MotorMissingError        an expected ID does not answer at connect
│   ├── MotorModelError          a motor answers with another model number
│   ├── MotorTimeoutError        no valid reply within the call's deadline
│   └── MotorFaultError          overload / overheat / voltage bits reported
└── CalibrationError             calibration file missing, unreadable or inconsistent
    └── CalibrationDoesNotFitError   a file applied to an arm it does not fit (another arm's)
"""

from dataclasses import dataclass

from robot.shell.errors import CommandError


class RobotError(CommandError):
    """Base of every error raised by `robot`."""


class ConfigError(RobotError, ValueError):
    """A rig configuration value is not allowed."""


@dataclass(frozen=True)
class ArmRef:
    """Which arm an error is about."""

    name: str  # e.g. "left_follower"
    port: str

    def __str__(self) -> str:
        return f"{self.name.replace('_', ' ')} on {self.port}"


class ArmConnectionError(RobotError, ConnectionError):
    """The arm's serial port cannot be used."""

    def __init__(self, arm: ArmRef, problem: str, next_step: str) -> None:
        self.arm = arm
        super().__init__(f"{arm}: {problem}. Next: {next_step}")


class PortNotFoundError(ArmConnectionError):
    """The configured port does not exist."""


class NotAServoBusError(ArmConnectionError):
    """The port opens but nothing on it speaks the Feetech protocol."""


class BusDisconnectedError(ArmConnectionError):
    """The port vanished while in use (cable pulled, adapter reset)."""


class MotorError(RobotError):
    """One motor of an arm misbehaves."""

    def __init__(self, arm: ArmRef, motor: str | None, problem: str, next_step: str) -> None:
        self.arm = arm
        self.motor = motor
        where = f"{arm}, motor {motor}" if motor else str(arm)
        super().__init__(f"{where}: {problem}. Next: {next_step}")


class MotorMissingError(MotorError):
    """An expected motor ID does not answer."""


class FactoryMotorsError(MotorMissingError):
    """Only ID 1 answers: the motors are factory-fresh (every new STS3215 is ID 1) or not set up yet."""


class MotorModelError(MotorError):
    """A motor reports a model number other than the STS3215's."""


class MotorTimeoutError(MotorError, TimeoutError):
    """No valid reply within the call's deadline, retries included."""


class MotorFaultError(MotorError):
    """A motor reports hardware error bits (overload, overheat, voltage...)."""

    def __init__(self, arm: ArmRef, motor: str, bits: list[str], next_step: str) -> None:
        self.bits = bits
        super().__init__(arm, motor, f"reports {', '.join(bits)}", next_step)


class CalibrationError(RobotError):
    """A calibration file is missing, unreadable or does not fit the arm."""


class CalibrationDoesNotFitError(CalibrationError):
    """A calibration file, applied to an arm, does not fit it: joints outside its ranges, or stops inside them.

    `problem` and `next_step` are the message's two parts, for so101-doctor's row.
    """

    def __init__(self, arm: ArmRef, file: str, findings: list[str]) -> None:
        self.arm = arm
        self.findings = findings
        self.problem = f"this calibration does not fit this arm ({file}): {'; '.join(findings)}"
        self.next_step = f"so101-calibrate --arms={arm.name}"
        super().__init__(f"{arm}: {self.problem}. Next: {self.next_step}")
