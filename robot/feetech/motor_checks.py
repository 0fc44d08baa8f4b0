"""The motors' handshake and raw register reads, with errors that name the motor and the next step.

LeRobot's own handshake and reads raise on any error bit and say little about which motor failed;
these read through whatever error bits a motor reports (an overloaded motor still has a model
number and a calibration), so so101-doctor and connect can say what they found.
"""

import scservo_sdk as scs
from lerobot.motors.feetech import FeetechMotorsBus

from robot.errors import (
    ArmRef,
    FactoryMotorsError,
    MotorError,
    MotorMissingError,
    MotorModelError,
    MotorTimeoutError,
    NotAServoBusError,
)
from robot.feetech.bus_guards import DOCTOR, translate
from robot.feetech.sts3215 import MODEL_STS3215, REGISTERS, Register
from robot.joints import JOINT_NAMES, MOTOR_IDS

_HOMING_OFFSET = REGISTERS["Homing_Offset"]
_MIN_POSITION = REGISTERS["Min_Position_Limit"]
_MAX_POSITION = REGISTERS["Max_Position_Limit"]
_TORQUE_ENABLE = REGISTERS["Torque_Enable"]
_FIRMWARE_MAJOR = REGISTERS["Firmware_Major_Version"]
_FIRMWARE_MINOR = REGISTERS["Firmware_Minor_Version"]


def ping(bus: FeetechMotorsBus, motor_id: int, attempts: int = 3) -> int | None:
    """The motor's model number, or None if it never answers (error bits do not hide it)."""
    for _ in range(attempts):
        model, comm, _error = bus.packet_handler.ping(bus.port_handler, motor_id)
        bus.port_handler.is_using = False
        if comm == scs.COMM_SUCCESS:
            return int(model)
    return None


def read_ignoring_errors(ref: ArmRef, bus: FeetechMotorsBus, motor_id: int, register: Register, what: str) -> int:
    """One register's raw value, whatever error bits the motor reports (LeRobot's reads raise on them)."""
    read = bus.packet_handler.read1ByteTxRx if register.size == 1 else bus.packet_handler.read2ByteTxRx
    for _ in range(3):
        value, comm, _error = read(bus.port_handler, motor_id, register.address)
        bus.port_handler.is_using = False
        if comm == scs.COMM_SUCCESS:
            return int(value)
    raise MotorTimeoutError(ref, JOINT_NAMES[motor_id - 1], f"no reply when reading its {what}", DOCTOR)


def firmware_version(ref: ArmRef, bus: FeetechMotorsBus, motor_id: int) -> str:
    """The motor's firmware version as "major.minor"."""
    major = read_ignoring_errors(ref, bus, motor_id, _FIRMWARE_MAJOR, "firmware version")
    minor = read_ignoring_errors(ref, bus, motor_id, _FIRMWARE_MINOR, "firmware version")
    return f"{major}.{minor}"


def motor_calibration(ref: ArmRef, bus: FeetechMotorsBus) -> dict[str, tuple[int, int, int]]:
    """Each joint's (homing_offset, range_min, range_max) as stored in its motor."""
    values = {}
    for joint in JOINT_NAMES:
        motor_id = MOTOR_IDS[joint]
        homing = _HOMING_OFFSET.decode(read_ignoring_errors(ref, bus, motor_id, _HOMING_OFFSET, "homing offset"))
        low = read_ignoring_errors(ref, bus, motor_id, _MIN_POSITION, "position limits")
        high = read_ignoring_errors(ref, bus, motor_id, _MAX_POSITION, "position limits")
        values[joint] = (homing, low, high)
    return values


def motor_torque(ref: ArmRef, bus: FeetechMotorsBus) -> dict[str, bool]:
    """Whether each motor holds its goal (Torque_Enable), read without writing anything."""
    return {j: read_ignoring_errors(ref, bus, MOTOR_IDS[j], _TORQUE_ENABLE, "torque") == 1 for j in JOINT_NAMES}


def check_motors(ref: ArmRef, bus: FeetechMotorsBus) -> None:
    """LeRobot's handshake: all six motors answer, are STS3215s and run one firmware version.

    Raises:
        NotAServoBusError: no motor answered at all.
        FactoryMotorsError: only ID 1 answered (new motors, or motor setup never ran).
        MotorMissingError, MotorModelError, MotorError: which motors, and what to do.
    """
    found: dict[str, int] = {}
    for joint in JOINT_NAMES:
        model = translate(ref, bus.port_handler, lambda j=joint: ping(bus, MOTOR_IDS[j]), motor=joint, what="ping")
        if model is not None:
            found[joint] = model
    if not found:
        raise NotAServoBusError(
            ref,
            "no servo answered (wrong port, arm unpowered, or not a Feetech bus)",
            "check the arm's power supply and that this port is the arm's controller board; " + DOCTOR,
        )
    missing = [j for j in JOINT_NAMES if j not in found]
    if list(found) == [JOINT_NAMES[0]]:  # MOTOR_IDS starts at 1: only ID 1 answers
        raise FactoryMotorsError(
            ref,
            None,
            "only motor id 1 answers: the motors are factory-fresh (every new STS3215 is id 1) or not set up yet",
            f"give each motor its id: so101-setup --arms={ref.name}",
        )
    if missing:
        ids = ", ".join(f"{j} (id {MOTOR_IDS[j]})" for j in missing)
        raise MotorMissingError(ref, ids, "does not answer", "check that motor's cable and daisy chain; " + DOCTOR)
    wrong = {j: m for j, m in found.items() if m != MODEL_STS3215}
    if wrong:
        detail = ", ".join(f"{j}: model {m}" for j, m in wrong.items())
        raise MotorModelError(
            ref,
            ", ".join(wrong),
            f"is not an STS3215 (expected model {MODEL_STS3215}; found {detail})",
            "replace it with an STS3215 or set it up with lerobot-setup-motors",
        )
    versions = {joint: firmware_version(ref, bus, MOTOR_IDS[joint]) for joint in JOINT_NAMES}
    if len(set(versions.values())) > 1:
        detail = ", ".join(f"{j}: {v}" for j, v in versions.items())
        raise MotorError(
            ref,
            None,
            f"motors run different firmware versions ({detail}); LeRobot requires one",
            "update them with Feetech's software (https://www.feetechrc.com/software)",
        )
