"""One emulated STS3215: its register image, EEPROM flash, firmware rules and protections.

Firmware rules modelled (from Feetech's memory table and LeRobot's use of it):
- Present_Position = (actual - Homing_Offset) mod 4096; the goal is clamped to the position
  limits and reached along the numeric line of the homed frame (single-turn mode never crosses
  the 4095 -> 0 seam, which is why LeRobot centres each range on 2047).
- EEPROM (addresses < 40) writes take effect at once but reach flash only while Lock == 0, so a
  write made while locked is gone after a power cycle.
- Torque_Enable 1 latches the goal to the present position (no jump); 128 re-homes so the
  present position reads 2048.
- Overload protection: a load above Overload_Torque for Protection_Time cuts the torque to
  Protective_Torque and sets the overload bit until the joint is no longer blocked; overheat
  (and anything else in Unloading_Condition) unloads torque.
"""

from dataclasses import dataclass

from robot.feetech.sts3215 import EEPROM_END, REGISTERS, RESOLUTION_STEPS, ErrorBit
from robot.virtual.factory import factory_image
from robot.virtual.memory import REGISTERS_AT, WRITABLE_ADDRESSES, put_value, raw_value, register_value
from robot.virtual.physics import Drive, JointModel, JointPhysics

_ACCEL_UNIT_STEPS_S2 = 100.0  # Acceleration register unit
_CURRENT_UNIT_MA = 6.5  # Present_Current unit
_STALL_CURRENT_MA = 2700.0  # STS3215 stall current at 12 V
_UNBLOCKED_STEPS = 15.0  # a joint this close to its goal is not pushing against anything
# Registers computed from the mechanics (Present_* .. Goal_Position_2): refreshed only when read.
_DERIVED_START = REGISTERS["Present_Position"].address
_DERIVED_END = REGISTERS["Goal_Position_2"].address + 2
_DERIVED_NAMES = (
    "Present_Position",
    "Present_Velocity",
    "Present_Load",
    "Present_Voltage",
    "Present_Temperature",
    "Status",
    "Moving",
    "Present_Current",
    "Goal_Position_2",
)


@dataclass(frozen=True)
class MotorState:
    """A snapshot of one motor for the control API and tests."""

    motor_id: int
    actual_steps: float
    present_position: int
    goal_position: int
    torque_enabled: bool
    load_permille: float
    temperature_c: float
    voltage_v: float
    error_bits: int
    homing_offset: int
    min_position_limit: int
    max_position_limit: int
    lock: int
    plugged: bool


class Motor:
    """An STS3215 on a bus: registers in, registers out, mechanics behind them."""

    def __init__(
        self, motor_id: int, joint: JointModel, *, supply_v: float, t0_s: float, physics: JointPhysics | None = None
    ) -> None:
        """`physics`: the joint's mechanics (default the ideal model on `joint`)."""
        self.joint = physics if physics is not None else JointPhysics(joint)
        self.supply_v = supply_v
        self._image = factory_image()
        self._cache: dict[str, int] = {}
        put_value(self._image, "ID", motor_id)
        self.flash = bytes(self._image[:EEPROM_END])
        self._last_t = t0_s
        self._overload_timer_s = 0.0
        self._latched_errors = 0
        self.forced_errors = 0  # error bits injected by a fault rule until cleared
        self.hand_actual: float | None = None
        self.plugged = True
        self._replug_at_s: float | None = None
        self._registered: tuple[int, bytes] | None = None  # REG_WRITE waiting for ACTION
        self.last_reply: bytes | None = None  # for stale-reply faults
        self._sync_goal_to_present()

    # --- register cache -------------------------------------------------------------------

    def _get(self, name: str) -> int:
        """A settings register's decoded value, cached until the image changes.

        The hot path reads a dozen of them per packet per motor.
        """
        value = self._cache.get(name)
        if value is None:
            value = self._cache[name] = register_value(self._image, name)
        return value

    def _set(self, name: str, value: int) -> None:
        put_value(self._image, name, value)
        self._cache.pop(name, None)

    # --- identity -------------------------------------------------------------------------

    @property
    def motor_id(self) -> int:
        """The ID the motor answers to."""
        return self._get("ID")

    @property
    def baud_index(self) -> int:
        """The Baud_Rate register (Feetech's index)."""
        return self._get("Baud_Rate")

    @property
    def replies_to_writes(self) -> bool:
        """Response_Status_Level 0 answers only READ and PING."""
        return self._get("Response_Status_Level") != 0

    @property
    def return_delay_s(self) -> float:
        """Return_Delay_Time in seconds (unit 2 µs)."""
        return self._get("Return_Delay_Time") * 2e-6

    # --- time -----------------------------------------------------------------------------

    def advance(self, t_s: float) -> None:
        """Bring the mechanics, protections and derived registers up to time `t_s`."""
        dt = t_s - self._last_t
        drive = self._drive()
        if dt > 0:
            self._last_t = t_s
            self.joint.advance(dt, drive)
            self._protect(dt)
        else:
            self.joint.update_load(drive)

    def _homing(self) -> int:
        return self._get("Homing_Offset")

    def present_position(self) -> int:
        """Present_Position as the firmware reports it."""
        return round(self.joint.position - self._homing()) % RESOLUTION_STEPS

    def _goal_actual(self) -> float:
        goal = self._get("Goal_Position")
        low, high = self._get("Min_Position_Limit"), self._get("Max_Position_Limit")
        if low < high:
            goal = max(low, min(high, goal))
        # Along the numeric line of the homed frame: from where we are, by the homed difference.
        present = (self.joint.position - self._homing()) % RESOLUTION_STEPS
        return self.joint.position + (goal - present)

    def _drive(self) -> Drive:
        torque_on = self._get("Torque_Enable") == 1
        limit = min(self._get("Max_Torque_Limit"), self._get("Torque_Limit"))
        if self._latched_errors & ErrorBit.OVERLOAD:
            limit = min(limit, self._get("Protective_Torque") * 10)
        accel = self._get("Acceleration")
        return Drive(
            torque_on=torque_on,
            goal_actual=self._goal_actual() if torque_on else None,
            torque_limit_permille=limit,
            max_speed_steps_s=float(abs(self._get("Goal_Velocity"))),
            max_accel_steps_s2=accel * _ACCEL_UNIT_STEPS_S2,
            p_gain_scale=self._get("P_Coefficient") / 32.0,
            hand_actual=self.hand_actual,
            d_gain_scale=self._get("D_Coefficient") / 32.0,
            max_accel_limit_steps_s2=self._get("Maximum_Acceleration") * _ACCEL_UNIT_STEPS_S2,
        )

    def _protect(self, dt_s: float) -> None:
        torque_on = self._get("Torque_Enable") == 1
        threshold = self._get("Overload_Torque") * 10
        if torque_on and abs(self.joint.load_permille) >= threshold > 0:
            self._overload_timer_s += dt_s
        else:
            self._overload_timer_s = 0.0
        if self._overload_timer_s >= self._get("Protection_Time") * 0.01:
            self._latched_errors |= ErrorBit.OVERLOAD
        elif self._latched_errors & ErrorBit.OVERLOAD and (
            not torque_on or abs(self._goal_actual() - self.joint.position) < _UNBLOCKED_STEPS
        ):
            self._latched_errors &= ~ErrorBit.OVERLOAD  # no longer pushing against anything
        if self.joint.temperature_c > self._get("Max_Temperature_Limit"):
            self._latched_errors |= ErrorBit.OVERHEAT
        unload = self._get("Unloading_Condition") & self._latched_errors
        if unload and torque_on:
            self._set("Torque_Enable", 0)

    def error_bits(self) -> int:
        """The error byte this motor puts in its status packets right now."""
        bits = self._latched_errors | self.forced_errors
        volts = self._voltage_v()
        if not (self._get("Min_Voltage_Limit") / 10 <= volts <= self._get("Max_Voltage_Limit") / 10):
            bits |= ErrorBit.VOLTAGE
        return bits

    def _voltage_v(self) -> float:
        return self.supply_v - 0.4 * abs(self.joint.load_permille) / 1000.0

    def _refresh_derived(self, start: int = _DERIVED_START, end: int = _DERIVED_END) -> None:
        """Recompute the mechanics' registers that overlap addresses [start, end).

        A sync read of positions every tick needs only Present_Position: working out load,
        voltage, status and current for it too was a third of the emulator's time per packet.
        """
        image = self._image
        for name in _DERIVED_NAMES:
            register = REGISTERS[name]
            if register.address < end and register.address + register.size > start:
                put_value(image, name, self._derived_value(name))

    def _derived_value(self, name: str) -> int:
        joint = self.joint
        match name:
            case "Present_Position":
                return self.present_position()
            case "Present_Velocity":
                return max(-32767, min(32767, round(joint.velocity)))
            case "Present_Load":
                return max(-1000, min(1000, round(joint.load_permille)))
            case "Present_Voltage":
                return max(0, min(255, round(self._voltage_v() * 10)))
            case "Present_Temperature":
                return max(0, min(255, round(joint.temperature_c)))
            case "Status":
                return self.error_bits()
            case "Moving":
                return int(abs(joint.velocity) > self._get("Moving_Velocity_Threshold") * 50 / 3)
            case "Present_Current":
                current_ma = _STALL_CURRENT_MA * abs(joint.load_permille) / 1000.0
                return min(0x7FFF, round(current_ma / _CURRENT_UNIT_MA))
            case _:  # Goal_Position_2
                return raw_value(self._image, "Goal_Position")

    # --- register access ------------------------------------------------------------------

    def read(self, address: int, length: int, t_s: float) -> bytes:
        """READ: `length` bytes from `address` at time `t_s` (zeros past the table)."""
        self.advance(t_s)
        if address < _DERIVED_END and address + length > _DERIVED_START:
            self._refresh_derived(address, address + length)
        return bytes(self._image[address : address + length]).ljust(length, b"\x00")

    def write(self, address: int, data: bytes, t_s: float) -> None:
        """WRITE: store `data` at `address` with the firmware's side effects."""
        self.advance(t_s)
        image = self._image
        end = min(len(image), address + len(data))
        old_torque = self._get("Torque_Enable")
        cache = self._cache
        for offset, addr in enumerate(range(address, end)):
            if addr not in WRITABLE_ADDRESSES:
                continue
            image[addr] = data[offset]
            for name in REGISTERS_AT.get(addr, ()):
                cache.pop(name, None)
        if address < EEPROM_END and self._get("Lock") == 0:
            self.flash = bytes(image[:EEPROM_END])
        if address <= REGISTERS["Torque_Enable"].address < end:
            self._torque_written(old_torque)

    def _torque_written(self, old_value: int) -> None:
        value = self._get("Torque_Enable")
        if value == 128:
            # Re-home so the current position reads 2048; torque stays off.
            offset = round(self.joint.position) - 2048
            offset = (offset + 2048) % RESOLUTION_STEPS - 2048
            offset = max(-2047, min(2047, offset))
            self._set("Homing_Offset", offset)
            self._set("Torque_Enable", 0)
            return
        # Writing Torque_Enable re-arms the protections.
        self._latched_errors = 0
        self._overload_timer_s = 0.0
        if value == 1 and old_value != 1:
            self._sync_goal_to_present()
            # A hand resting on the arm lets the motors drive it; when the torque goes off again the
            # arm stays where they left it (a handover to the person), not where the hand last was.
            self.hand_actual = None

    def _sync_goal_to_present(self) -> None:
        self._set("Goal_Position", self.present_position())

    def reg_write(self, address: int, data: bytes) -> None:
        """REG_WRITE: hold a write until ACTION."""
        self._registered = (address, bytes(data))

    def action(self, t_s: float) -> None:
        """ACTION: apply the held REG_WRITE, if any."""
        if self._registered is not None:
            address, data = self._registered
            self._registered = None
            self.write(address, data, t_s)

    def factory_reset(self, t_s: float) -> None:
        """RESET: factory values everywhere except the ID."""
        motor_id = self.motor_id
        self.advance(t_s)
        self._image = factory_image()
        self._cache.clear()
        put_value(self._image, "ID", motor_id)
        self.flash = bytes(self._image[:EEPROM_END])
        self._sync_goal_to_present()
        self._refresh_derived()

    def power_cycle(self, t_s: float) -> None:
        """Lose SRAM: reload EEPROM from flash, factory SRAM, torque off, protections re-armed."""
        self.advance(t_s)
        image = factory_image()
        image[:EEPROM_END] = self.flash
        self._image = image
        self._cache.clear()
        self._latched_errors = 0
        self._overload_timer_s = 0.0
        self._registered = None
        self._sync_goal_to_present()
        self._refresh_derived()

    def load_flash(self, flash: bytes) -> None:
        """Restore EEPROM contents saved by an earlier run (a power-on from persisted state)."""
        if len(flash) != EEPROM_END:
            raise ValueError(f"flash image must be {EEPROM_END} bytes, got {len(flash)}")
        self.flash = bytes(flash)
        self._image[:EEPROM_END] = self.flash
        self._cache.clear()
        self._sync_goal_to_present()
        self._refresh_derived()

    def unplug(self, duration_s: float | None, t_s: float) -> None:
        """Pull the motor's cable; with a duration, it comes back by itself (power-cycled)."""
        self.plugged = False
        self._replug_at_s = t_s + duration_s if duration_s else None

    def replug(self, t_s: float) -> None:
        """Plug the motor back in: it boots from flash."""
        self.plugged = True
        self._replug_at_s = None
        self.power_cycle(t_s)

    def is_plugged(self, t_s: float) -> bool:
        """Whether the motor is on the bus at `t_s` (a timed unplug ends by itself)."""
        if not self.plugged and self._replug_at_s is not None and t_s >= self._replug_at_s:
            self.replug(t_s)
        return self.plugged

    def poke(self, address: int, data: bytes) -> None:
        """Overwrite raw memory, read-only registers included (a wrong model, a bad firmware)."""
        self._image[address : address + len(data)] = data
        self._cache.clear()
        if address < EEPROM_END:
            self.flash = bytes(self._image[:EEPROM_END])

    def set_temperature(self, celsius: float) -> None:
        """Force the case temperature (an overheating scenario)."""
        self.joint.temperature_c = celsius

    def state(self, t_s: float) -> MotorState:
        """A snapshot at time `t_s`."""
        self.advance(t_s)
        self._refresh_derived()
        image = self._image
        return MotorState(
            motor_id=self.motor_id,
            actual_steps=self.joint.position,
            present_position=self.present_position(),
            goal_position=register_value(image, "Goal_Position"),
            torque_enabled=raw_value(image, "Torque_Enable") == 1,
            load_permille=self.joint.load_permille,
            temperature_c=self.joint.temperature_c,
            voltage_v=self._voltage_v(),
            error_bits=self.error_bits(),
            homing_offset=self._homing(),
            min_position_limit=raw_value(image, "Min_Position_Limit"),
            max_position_limit=raw_value(image, "Max_Position_Limit"),
            lock=raw_value(image, "Lock"),
            plugged=self.plugged,
        )
