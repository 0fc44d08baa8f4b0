"""The status block an arm's health poll reads: Present_Load through Status in one sync read.

Sync reads of positions drop the motors' error bits, so the poll reads this block instead; its
layout comes from the STS3215 control table, not from hard-coded offsets.
"""

from robot.arm import MotorHealth
from robot.feetech.sts3215 import REGISTERS

_LOAD = REGISTERS["Present_Load"]
_VOLTAGE = REGISTERS["Present_Voltage"]
_TEMPERATURE = REGISTERS["Present_Temperature"]
_STATUS = REGISTERS["Status"]

# Load(2) Voltage(1) Temperature(1) [one unnamed byte] Status(1).
HEALTH_ADDRESS = _LOAD.address
HEALTH_LENGTH = _STATUS.address + _STATUS.size - HEALTH_ADDRESS


def _field(data: bytes, address: int, size: int) -> int:
    start = address - HEALTH_ADDRESS
    return int.from_bytes(data[start : start + size], "little")


def motor_health(data: bytes) -> MotorHealth:
    """One motor's `HEALTH_LENGTH` bytes, decoded (load in %, voltage in V, temperature in °C)."""
    load = _LOAD.decode(_field(data, _LOAD.address, _LOAD.size))
    return MotorHealth(
        error_bits=_field(data, _STATUS.address, _STATUS.size),
        temperature_c=float(_field(data, _TEMPERATURE.address, _TEMPERATURE.size)),
        load_percent=load / 10.0,  # the register counts 0.1 % of maximum torque
        voltage_v=_field(data, _VOLTAGE.address, _VOLTAGE.size) / 10.0,  # 0.1 V units
    )
