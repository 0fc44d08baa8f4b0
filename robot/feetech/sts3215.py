"""The Feetech STS3215 servo's hardware facts: its control table, error bits and encodings.

One home for what the real motor is, used by the driver (`robot.feetech.so101_arm`, `robot.arm`)
and by the emulator (`robot.virtual`), never the other way round. Addresses and sign bits follow
Feetech's memory table as LeRobot 0.6.1 uses it (`lerobot/motors/feetech/tables.py`). Multi-byte
registers are little-endian (STS series, `PacketHandler(0)`).
"""

from dataclasses import dataclass
from enum import IntFlag

MODEL_STS3215 = 777  # what Model_Number reads on an STS3215
RESOLUTION_STEPS = 4096  # encoder steps per turn
MEMORY_SIZE = 256  # bytes of the control table's address space
# Addresses below this are EEPROM: kept across a power cycle only when written with Lock == 0.
EEPROM_END = 40


class ErrorBit(IntFlag):
    """Bits of a status packet's error byte and of the Status register (65)."""

    VOLTAGE = 1
    ANGLE = 2
    OVERHEAT = 4
    OVERCURRENT = 8
    OVERLOAD = 32


@dataclass(frozen=True)
class Register:
    """One named register of the control table."""

    name: str
    address: int
    size: int  # bytes, 1 or 2
    readonly: bool = False
    sign_bit: int | None = None  # sign-magnitude encoding: the bit that carries the sign

    def encode(self, value: int) -> int:
        """The raw register value for `value` (sign-magnitude where the register has a sign bit)."""
        return value if self.sign_bit is None else encode_sign_magnitude(value, self.sign_bit)

    def decode(self, raw: int) -> int:
        """The value a raw register value stands for (inverse of `encode`)."""
        return raw if self.sign_bit is None else decode_sign_magnitude(raw, self.sign_bit)


_REGISTERS = (
    Register("Firmware_Major_Version", 0, 1, readonly=True),
    Register("Firmware_Minor_Version", 1, 1, readonly=True),
    Register("Model_Number", 3, 2, readonly=True),
    Register("ID", 5, 1),
    Register("Baud_Rate", 6, 1),
    Register("Return_Delay_Time", 7, 1),
    Register("Response_Status_Level", 8, 1),
    Register("Min_Position_Limit", 9, 2),
    Register("Max_Position_Limit", 11, 2),
    Register("Max_Temperature_Limit", 13, 1),
    Register("Max_Voltage_Limit", 14, 1),
    Register("Min_Voltage_Limit", 15, 1),
    Register("Max_Torque_Limit", 16, 2),
    Register("Phase", 18, 1),
    Register("Unloading_Condition", 19, 1),
    Register("LED_Alarm_Condition", 20, 1),
    Register("P_Coefficient", 21, 1),
    Register("D_Coefficient", 22, 1),
    Register("I_Coefficient", 23, 1),
    Register("Minimum_Startup_Force", 24, 2),
    Register("CW_Dead_Zone", 26, 1),
    Register("CCW_Dead_Zone", 27, 1),
    Register("Protection_Current", 28, 2),
    Register("Angular_Resolution", 30, 1),
    Register("Homing_Offset", 31, 2, sign_bit=11),
    Register("Operating_Mode", 33, 1),
    Register("Protective_Torque", 34, 1),
    Register("Protection_Time", 35, 1),
    Register("Overload_Torque", 36, 1),
    Register("Velocity_closed_loop_P_proportional_coefficient", 37, 1),
    Register("Over_Current_Protection_Time", 38, 1),
    Register("Velocity_closed_loop_I_integral_coefficient", 39, 1),
    Register("Torque_Enable", 40, 1),
    Register("Acceleration", 41, 1),
    Register("Goal_Position", 42, 2, sign_bit=15),
    Register("Goal_Time", 44, 2),
    Register("Goal_Velocity", 46, 2, sign_bit=15),
    Register("Torque_Limit", 48, 2),
    Register("Lock", 55, 1),
    Register("Present_Position", 56, 2, readonly=True, sign_bit=15),
    Register("Present_Velocity", 58, 2, readonly=True, sign_bit=15),
    Register("Present_Load", 60, 2, readonly=True, sign_bit=10),
    Register("Present_Voltage", 62, 1, readonly=True),
    Register("Present_Temperature", 63, 1, readonly=True),
    Register("Status", 65, 1, readonly=True),
    Register("Moving", 66, 1, readonly=True),
    Register("Present_Current", 69, 2, readonly=True),
    Register("Goal_Position_2", 71, 2, readonly=True),
    Register("Moving_Velocity_Threshold", 80, 1),
    Register("DTs", 81, 1),
    Register("Velocity_Unit_factor", 82, 1),
    Register("Hts", 83, 1),
    Register("Maximum_Velocity_Limit", 84, 1),
    Register("Maximum_Acceleration", 85, 1),
    Register("Acceleration_Multiplier", 86, 1),
)

REGISTERS: dict[str, Register] = {r.name: r for r in _REGISTERS}
REGISTER_AT: dict[int, Register] = {r.address: r for r in _REGISTERS}

# Feetech's own baud-rate index (SMS_STS.h); LeRobot's table differs above index 4 but LeRobot
# only ever writes index 0.
BAUD_RATE_BY_INDEX: dict[int, int] = {
    0: 1_000_000,
    1: 500_000,
    2: 250_000,
    3: 128_000,
    4: 115_200,
    5: 76_800,
    6: 57_600,
    7: 38_400,
}


def encode_sign_magnitude(value: int, sign_bit: int) -> int:
    """Encode a signed integer as sign-magnitude with the sign at `sign_bit`."""
    magnitude = abs(value)
    max_magnitude = (1 << sign_bit) - 1
    if magnitude > max_magnitude:
        raise ValueError(f"magnitude {magnitude} exceeds {max_magnitude} for sign bit {sign_bit}")
    return magnitude | (1 << sign_bit) if value < 0 else magnitude


def decode_sign_magnitude(raw: int, sign_bit: int) -> int:
    """Decode a sign-magnitude register value with the sign at `sign_bit`."""
    magnitude = raw & ((1 << sign_bit) - 1)
    return -magnitude if raw & (1 << sign_bit) else magnitude


def register_name(address: int) -> str:
    """The name of the register starting at `address`, or `@<address>` for unnamed ones."""
    register = REGISTER_AT.get(address)
    return register.name if register else f"@{address}"
