"""The Feetech STS3215 control table: addresses, sizes, EEPROM/SRAM split, factory defaults.

Addresses and sign bits follow Feetech's memory table as LeRobot 0.6.1 uses it
(`lerobot/motors/feetech/tables.py`); the factory values follow Feetech's documentation where it
gives them. Multi-byte registers are little-endian (STS series, `PacketHandler(0)`).
"""

from dataclasses import dataclass
from enum import IntFlag

MODEL_STS3215 = 777
FIRMWARE_MAJOR = 3
FIRMWARE_MINOR = 10
RESOLUTION_STEPS = 4096
MEMORY_SIZE = 256
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

# Factory image of a new STS3215 (ID 1, 1 Mbps). Unlisted addresses read 0.
FACTORY_VALUES: dict[str, int] = {
    "Firmware_Major_Version": FIRMWARE_MAJOR,
    "Firmware_Minor_Version": FIRMWARE_MINOR,
    "Model_Number": MODEL_STS3215,
    "ID": 1,
    "Baud_Rate": 0,
    "Return_Delay_Time": 250,  # 500 µs: LeRobot's configure() writes 0
    "Response_Status_Level": 1,
    "Min_Position_Limit": 0,
    "Max_Position_Limit": 4095,
    "Max_Temperature_Limit": 70,  # °C
    "Max_Voltage_Limit": 140,  # 0.1 V
    "Min_Voltage_Limit": 40,  # 0.1 V
    "Max_Torque_Limit": 1000,  # 0.1 %
    "Phase": 0,
    # Unload torque on overheat and overcurrent. Overload is not in it: registers 34-36 describe
    # overload protection as torque reduced to Protective_Torque, which is how grippers keep a grasp.
    "Unloading_Condition": 12,
    "LED_Alarm_Condition": 47,
    "P_Coefficient": 32,
    "D_Coefficient": 32,
    "I_Coefficient": 0,
    "Minimum_Startup_Force": 16,
    "CW_Dead_Zone": 1,
    "CCW_Dead_Zone": 1,
    "Protection_Current": 500,  # 6.5 mA units
    "Angular_Resolution": 1,
    "Homing_Offset": 0,
    "Operating_Mode": 0,
    "Protective_Torque": 20,  # % of max torque once overload protection is active
    "Protection_Time": 200,  # 10 ms units: 2 s above Overload_Torque trips protection
    "Overload_Torque": 80,  # % of max torque that starts the protection timer
    "Velocity_closed_loop_P_proportional_coefficient": 10,
    "Over_Current_Protection_Time": 200,
    "Velocity_closed_loop_I_integral_coefficient": 200,
    "Torque_Enable": 0,
    "Acceleration": 0,
    "Goal_Velocity": 0,
    "Torque_Limit": 1000,
    "Lock": 0,
    "Moving_Velocity_Threshold": 2,
    "Maximum_Velocity_Limit": 0,
    "Maximum_Acceleration": 0,
}

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


def factory_image() -> bytearray:
    """A fresh 256-byte memory image holding the factory values."""
    image = bytearray(MEMORY_SIZE)
    for name, value in FACTORY_VALUES.items():
        register = REGISTERS[name]
        raw = encode_sign_magnitude(value, register.sign_bit) if register.sign_bit is not None else value
        image[register.address : register.address + register.size] = raw.to_bytes(register.size, "little")
    return image


def register_name(address: int) -> str:
    """The name of the register starting at `address`, or `@<address>` for unnamed ones."""
    register = REGISTER_AT.get(address)
    return register.name if register else f"@{address}"
