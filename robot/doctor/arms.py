"""The doctor's arm rows: port, motors, calibration, power, motor status and bus timing."""

import statistics
import time

from robot.config import PowerProfile, RigConfig
from robot.doctor.rows import CheckRow, Status
from robot.errors import (
    ArmConnectionError,
    CalibrationError,
    MotorError,
    MotorTimeoutError,
    PortNotFoundError,
)
from robot.feetech.bus_guards import silent_in
from robot.feetech.calibration_files import calibration_path, calibration_root, load_calibration
from robot.feetech.motor_checks import motor_torque
from robot.feetech.so101_arm import SO101Arm
from robot.joints import FULL_TURN_JOINT, JOINT_NAMES, Role, Side

BUS_SAMPLES = 100
MAX_MISSED_FRACTION = 0.05  # reads that ran out of their deadline, beyond which the bus fails
MIN_SANE_RANGE_STEPS = 800  # a calibrated SO-101 joint spans ~2000-2600 steps
# What a follower's motors report on a healthy supply, V, for each of the rig file's `power` profiles:
# 12 V STS3215 on a 12 V supply; 7.4 V STS3215 on a 5 V supply (rated up to 8.4 V).
FOLLOWER_SUPPLY_V = {PowerProfile.V12: (10.5, 13.5), PowerProfile.V5: (4.5, 8.4)}
LEADER_MAX_V = 9.0  # leader motors are 7.4 V parts, usually fed 5 V
LEADER_LIKE_V = 6.0  # at most this on a follower under the 12v profile: maybe a leader (ports swapped)
WARM_C, HOT_C = 50.0, 60.0


def _arm(name: str, port: str, rig: RigConfig) -> SO101Arm:
    side, role = Side(name.split("_")[0]), Role(name.split("_")[1])
    return SO101Arm(side, role, port, rig_id=rig.id, calibration=rig.calibration, bus=rig.bus)


def file_calibrations(rig: RigConfig) -> dict[str, dict[str, tuple[int, int, int]] | CalibrationError]:
    """Each arm's calibration file as (homing, min, max) per joint, or the error reading it."""
    root = calibration_root(rig.calibration.dir)
    found: dict[str, dict[str, tuple[int, int, int]] | CalibrationError] = {}
    for name in rig.ports.by_arm():
        side, role = Side(name.split("_")[0]), Role(name.split("_")[1])
        try:
            calibration = load_calibration(calibration_path(root, rig.id, side, role))
            found[name] = {j: (c.homing_offset, c.range_min, c.range_max) for j, c in calibration.items()}
        except CalibrationError as e:
            found[name] = e
    return found


def check_arm(name: str, port: str, rig: RigConfig, files: dict) -> list[CheckRow]:
    """Port, motors, calibration, power, temperature and bus timing of one arm."""
    arm = _arm(name, port, rig)
    try:
        arm.open_for_inspection()
    except PortNotFoundError as e:
        return [CheckRow(name, "port", Status.FAIL, f"{port}: no such device", _next(e))]
    except (ArmConnectionError, MotorError) as e:
        return [
            CheckRow(name, "port", Status.PASS, port),
            CheckRow(name, "motors", Status.FAIL, _problem(e), _next(e)),
        ]
    try:
        rows = [
            CheckRow(name, "port", Status.PASS, port),
            CheckRow(name, "motors", Status.PASS, "6 x STS3215 (ids 1-6), one firmware version"),
            _check_calibration(name, arm, files, rig),
        ]
        rows.extend(_check_health(name, arm, rig.power))
        rows.append(_torque_row(name, arm))
        rows.append(_check_bus(name, arm))
        return rows
    except (ArmConnectionError, MotorError) as e:
        return [CheckRow(name, "bus", Status.FAIL, _problem(e), _next(e))]
    finally:
        arm.disconnect(release_torque=False)


def _torque_row(name: str, arm: SO101Arm) -> CheckRow:
    """Whether the motors hold their goals now: a fact to know before touching an arm, never a fault."""
    held = [joint for joint, on in motor_torque(arm.ref, arm.device.bus).items() if on]
    if not held:
        return CheckRow(name, "torque", Status.PASS, "off: the arm moves freely by hand")
    if len(held) == len(JOINT_NAMES):
        return CheckRow(name, "torque", Status.PASS, "on: every motor holds its position")
    return CheckRow(name, "torque", Status.PASS, f"on for {', '.join(held)} only")


def _problem(error: Exception) -> str:
    return str(error).split(". Next: ")[0]


def _next(error: Exception) -> str:
    text = str(error)
    return text.split(". Next: ", 1)[1] if ". Next: " in text else "run so101-doctor again after fixing"


def _check_calibration(name: str, arm: SO101Arm, files: dict, rig: RigConfig) -> CheckRow:
    # The verdict connect gives (robot/feetech/calibration_fit.py), found here without writing anything.
    from robot.feetech.calibration_fit import PROBE, misfit_before_writing

    mine = files.get(name)
    if isinstance(mine, CalibrationError):
        return CheckRow(name, "calibration", Status.FAIL, _problem(mine), _next(mine))
    motors = arm.read_motor_calibration()
    if mine and motors != mine:
        for other, theirs in files.items():
            if other != name and theirs == motors:
                return CheckRow(
                    name,
                    "calibration",
                    Status.FAIL,
                    f"the motors on {arm.port} carry {other}'s calibration",
                    f"the {name} and {other} ports are probably swapped in the rig file: swap them",
                )
    misfit = misfit_before_writing(arm.ref, arm.device.bus, arm.calibration_file, mine, motors) if mine else None
    if misfit:
        return CheckRow(name, "calibration", Status.FAIL, misfit.problem, misfit.next_step)
    narrow = [
        j for j in JOINT_NAMES if j != FULL_TURN_JOINT and mine and mine[j][2] - mine[j][1] < MIN_SANE_RANGE_STEPS
    ]
    if motors == mine:
        if narrow:
            return CheckRow(
                name,
                "calibration",
                Status.WARN,
                f"{', '.join(narrow)}: range under {MIN_SANE_RANGE_STEPS} steps",
                "run so101-calibrate and move each joint through its whole travel",
            )
        return CheckRow(name, "calibration", Status.PASS, f"{arm.calibration_file.name} matches the motors")
    if rig.calibration.on_mismatch == "fail":
        return CheckRow(name, "calibration", Status.FAIL, "motors differ from the file", "run so101-calibrate")
    probe = f", and each joint whose range is new to its motor moved up to {PROBE.distance_deg:g} degrees each way"
    return CheckRow(
        name,
        "calibration",
        Status.WARN,
        "motors differ from the file (its joints' positions fit its ranges); it will be written to them at connect"
        + (probe if arm.role is Role.FOLLOWER else ""),
        f"if a motor was replaced, or the file came from another arm, run so101-calibrate --arms={name}",
    )


def _check_health(name: str, arm: SO101Arm, power: PowerProfile = PowerProfile.V12) -> list[CheckRow]:
    health = arm.read_health()
    volts = [m.voltage_v for m in health.motors.values()]
    low, high = min(volts), max(volts)
    faults = health.faults
    if arm.role is Role.FOLLOWER:
        power_row = _follower_power(name, low, high, PowerProfile(power))
    else:
        power_row = _leader_power(name, low, high)
    hottest = max(health.motors.items(), key=lambda item: item[1].temperature_c)
    temperature = hottest[1].temperature_c
    if faults:
        detail = "; ".join(f"{j}: {', '.join(e)}" for j, e in faults.items())
        heat = CheckRow(
            name,
            "motor status",
            Status.FAIL,
            detail,
            "let the motors cool, free any blocked joint, power-cycle the arm",
        )
    elif temperature >= HOT_C:
        heat = CheckRow(
            name, "motor status", Status.WARN, f"{hottest[0]} at {temperature:.0f} C", "let it cool before recording"
        )
    else:
        heat = CheckRow(name, "motor status", Status.PASS, f"no errors, hottest {temperature:.0f} C")
    return [power_row, heat]


def _follower_power(name: str, low: float, high: float, power: PowerProfile) -> CheckRow:
    """A follower's supply as its motors report it, against the rig file's `power` profile."""
    floor, ceiling = FOLLOWER_SUPPLY_V[power]
    detail = f"{low:.1f}-{high:.1f} V ({power} profile: {floor:g}-{ceiling:g} V expected)"
    if floor <= low and high <= ceiling:
        return CheckRow(name, "power", Status.PASS, detail)
    five_volt_floor, five_volt_ceiling = FOLLOWER_SUPPLY_V[PowerProfile.V5]
    if power is PowerProfile.V12 and high < floor and five_volt_floor <= low and high <= five_volt_ceiling:
        fix = (
            "either the 12 V supply is not plugged in (check the adapter and its connector at the arm's board),"
            " or this arm is built with 7.4 V motors on a 5 V supply: then set `power: 5v` in the rig file"
        )
        if high <= LEADER_LIKE_V:
            fix += "; or this port is a leader's (5 V): the leader and follower ports may be swapped in the rig file"
        return CheckRow(name, "power", Status.FAIL, detail, fix)
    if power is PowerProfile.V5 and high > ceiling:
        return CheckRow(
            name,
            "power",
            Status.FAIL,
            f"{detail}: above what 7.4 V motors are rated for",
            "if this arm's motors are 7.4 V parts, unplug that supply now and feed it 5 V; if it is built with"
            " 12 V motors (the SO-101 kit's followers), set `power: 12v` in the rig file",
        )
    if high > ceiling:
        return CheckRow(name, "power", Status.FAIL, detail, "too high for the motors: use the arm's 12 V adapter")
    supply = "12 V" if power is PowerProfile.V12 else "5 V"
    return CheckRow(
        name,
        "power",
        Status.FAIL,
        detail,
        f"the follower's {supply} supply is missing or sagging: check the adapter, its rating and its connector",
    )


def _leader_power(name: str, low: float, high: float) -> CheckRow:
    """A leader's supply: 7.4 V motors on 5 V; a 12 V reading is most likely a follower's motors."""
    detail = f"{low:.1f}-{high:.1f} V"
    if high >= FOLLOWER_SUPPLY_V[PowerProfile.V12][0]:
        return CheckRow(
            name,
            "power",
            Status.FAIL,
            f"{detail}: 12 V, a follower's supply: this port is most likely a follower (ports swapped)",
            "swap this leader's port with the follower's in the rig file (the calibration rows say which);"
            " if it really is a leader, unplug the 12 V supply now: leader motors are 7.4 V parts, fed 5 V",
        )
    if high > LEADER_MAX_V:
        return CheckRow(
            name, "power", Status.FAIL, detail, "leader motors are 7.4 V parts: use the 5 V supply, not 12 V"
        )
    return CheckRow(name, "power", Status.PASS, detail)


def _check_bus(name: str, arm: SO101Arm, samples: int = BUS_SAMPLES) -> CheckRow:
    bus = arm.device.bus
    times, retries, missed = [], 0, 0
    for _ in range(samples):
        start = time.perf_counter()
        try:
            _, attempts = arm._within_deadline(
                lambda: bus.sync_read("Present_Position", normalize=False, num_retry=0),
                silent_in(bus.sync_reader),
            )
            retries += attempts - 1
        except MotorTimeoutError:
            missed += 1
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    p50, p99 = statistics.median(times), times[int(0.99 * (len(times) - 1))]
    detail = f"sync read p50 {p50:.2f} ms, p99 {p99:.2f} ms; {retries} retries, {missed} missed of {samples}"
    fix = "check the USB cable and hub; set the adapter's latency timer to 1 ms; close CPU-heavy programs"
    if missed > samples * MAX_MISSED_FRACTION:
        return CheckRow(name, "bus", Status.FAIL, detail, fix)
    if missed or retries > samples * 0.01 or p99 > arm.bus_config.read_deadline_ms:
        return CheckRow(name, "bus", Status.WARN, detail, fix)
    return CheckRow(name, "bus", Status.PASS, detail)
