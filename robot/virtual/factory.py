"""The factory image of an emulated STS3215: what a new virtual motor's memory holds.

The table itself (addresses, sizes, sign bits) is the hardware's, in `robot.feetech.sts3215`; the
values here follow Feetech's documentation where it gives them, and the firmware version is the one
the emulator reports.
"""

from robot.feetech.sts3215 import MEMORY_SIZE, MODEL_STS3215, REGISTERS, encode_sign_magnitude

FIRMWARE_MAJOR = 3
FIRMWARE_MINOR = 10

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


def factory_image() -> bytearray:
    """A fresh 256-byte memory image holding the factory values."""
    image = bytearray(MEMORY_SIZE)
    for name, value in FACTORY_VALUES.items():
        register = REGISTERS[name]
        raw = encode_sign_magnitude(value, register.sign_bit) if register.sign_bit is not None else value
        image[register.address : register.address + register.size] = raw.to_bytes(register.size, "little")
    return image
