"""An SO-101 arm on LeRobot 0.6.1's `SOFollower`/`SOLeader`, with the bus guarded for a 30 Hz loop.

LeRobot owns the motor table, normalisation, calibration format and configure(); this adapter
adds what a control loop needs on top (see `GuardedPortHandler` for the port part):
- reads bounded by a per-call deadline, retries included, that name the silent motor;
- values from a failed sync read are never used (LeRobot raises; we retry or raise);
- a status poll (Status, temperature, load, voltage in one sync read), because sync reads of
  positions drop the error bits;
- typed errors naming side, role, port and motor, with the next step.
"""

import contextlib
import logging
import termios
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TypeVar

import scservo_sdk as scs
import serial
from lerobot.motors.feetech import FeetechMotorsBus
from lerobot.robots.so_follower import SOFollower, SOFollowerRobotConfig
from lerobot.teleoperators.so_leader import SOLeader, SOLeaderTeleopConfig

from robot.arm import ArmHealth, JointPositions, JointReading
from robot.config import BusConfig, CalibrationConfig
from robot.errors import (
    ArmConnectionError,
    ArmRef,
    CalibrationError,
    MotorFaultError,
    MotorTimeoutError,
)
from robot.feetech.bus_guards import silent_in, translate, within_deadline
from robot.feetech.calibration_files import (
    ArmCalibration,
    arm_calibration_dir,
    calibration_path,
    calibration_root,
    load_calibration,
)
from robot.feetech.calibration_fit import apply_file, check_fit
from robot.feetech.health_block import HEALTH_ADDRESS, HEALTH_LENGTH, motor_health
from robot.feetech.motor_checks import check_motors, motor_calibration
from robot.feetech.open_errors import open_error
from robot.feetech.packets import CheckedPacketHandler
from robot.feetech.port import GuardedPortHandler
from robot.feetech.sts3215 import REGISTERS
from robot.joints import JOINT_NAMES, MOTOR_IDS, Role, Side, arm_name

logger = logging.getLogger(__name__)
T = TypeVar("T")


_POSITION = REGISTERS["Present_Position"]
_POSITION_ADDRESS = _POSITION.address
_POSITION_LENGTH = _POSITION.size


@dataclass(frozen=True)
class PendingRead:
    """A positions read on its way: sent by `SO101Arm.request_joints`, not collected yet."""

    start_s: float  # monotonic time the request was started, s
    deadline_ms: float  # the read's absolute deadline on the port's clock, ms
    sent: bool  # False: the request did not go out (collect retries it)


class SO101Arm:
    """One follower or leader arm. Not thread-safe: one thread drives one arm at a time."""

    def __init__(
        self,
        side: Side,
        role: Role,
        port: str,
        *,
        rig_id: str,
        calibration: CalibrationConfig,
        bus: BusConfig,
    ) -> None:
        self.side = side
        self.role = role
        self.port = port
        self.rig_id = rig_id
        self.calibration_config = calibration
        self.bus_config = bus
        self.ref = ArmRef(arm_name(side, role), port)
        root = calibration_root(calibration.dir)
        self.calibration_file: Path = calibration_path(root, rig_id, side, role)
        self._calibration_dir = arm_calibration_dir(root, role)
        self._device: SOFollower | SOLeader | None = None
        self._health_reader: scs.GroupSyncRead | None = None
        self._next_poll_s = 0.0
        self.last_health: ArmHealth | None = None

    @property
    def name(self) -> str:
        """e.g. "left_follower"."""
        return self.ref.name

    def __repr__(self) -> str:
        return f"SO101Arm({self.ref})"

    # --- lifecycle -------------------------------------------------------------------------

    @property
    def device(self) -> SOFollower | SOLeader:
        """The LeRobot object (for code that wants LeRobot's own API)."""
        if self._device is None:
            raise ArmConnectionError(self.ref, "not connected", "call connect() first")
        return self._device

    @property
    def is_connected(self) -> bool:
        """Whether the port is open."""
        return self._device is not None and self._device.bus.is_connected

    def open_for_inspection(self) -> None:
        """Open the port and check the motors, changing nothing on them (so101-doctor).

        The calibration file is not applied and nothing is written, so a wrong port or a
        mismatched calibration can be reported as found.
        """
        self._open(with_calibration=False, then=lambda: None)

    def open_for_setup(self) -> FeetechMotorsBus:
        """Open the port with no handshake and nothing written: LeRobot's bus, for so101-setup.

        Factory-fresh motors all answer as ID 1, so the handshake would fail; motor setup finds
        each motor at whatever ID and baud rate it has.
        """
        return self._open_port(with_calibration=False).bus

    def _open_port(self, *, with_calibration: bool) -> SOFollower | SOLeader:
        """LeRobot's device on our guarded port handler, its port open (no handshake)."""
        device = self._make_device(with_calibration=with_calibration)
        self._install_port_handler(device)
        try:
            device.bus.connect(handshake=False)
        except ConnectionError as e:
            raise open_error(self.ref, e.__cause__ or e) from e
        self._device = device
        return device

    def _open(self, *, with_calibration: bool, then: Callable[[], None]) -> None:
        """Open the port, check the motors, run `then`; on any failure close the port again."""
        device = self._open_port(with_calibration=with_calibration)
        try:
            check_motors(self.ref, device.bus)
            then()
        except BaseException:
            self._close_quietly()
            raise

    def read_motor_calibration(self) -> dict[str, tuple[int, int, int]]:
        """Each joint's (homing_offset, range_min, range_max) as stored in its motor."""
        return motor_calibration(self.ref, self.device.bus)

    def connect(self, *, require_calibration: bool = True) -> None:
        """Open the port, check every motor, apply calibration, configure, check the file fits (calibration_fit.py).

        With `require_calibration=False` (so101-calibrate) a missing calibration file is fine and
        the motors are neither configured nor checked; the caller calibrates, then calls `configure()`.
        """
        have_file = self.calibration_file.exists()
        if have_file:
            load_calibration(self.calibration_file)  # a clear error before LeRobot reads it
        elif require_calibration:
            raise CalibrationError(
                f"{self.ref}: no calibration file at {self.calibration_file}. Next: run so101-calibrate"
            )

        def calibrate_and_configure() -> None:
            previous = self._apply_calibration() if have_file else None
            if require_calibration:
                self.configure()
                bus, file, moves = self.device.bus, self.calibration_file, self.role is Role.FOLLOWER
                fit = partial(check_fit, self.ref, bus, file, previous=previous, may_move=moves)  # refuses a misfit
                self._translate(fit, motor=None, what="check that the calibration fits")

        self._open(with_calibration=True, then=calibrate_and_configure)

    def configure(self) -> None:
        """Run LeRobot's configure: return delay 0, acceleration, PID, gripper torque limits."""
        self._translate(self.device.configure, motor=None, what="configure the motors")

    def disconnect(self, *, release_torque: bool = True) -> None:
        """Close the port; by default release torque first (LeRobot retries that 5 times)."""
        if self._device is None:
            return
        try:
            if self._device.bus.is_connected:
                self._device.bus.disconnect(disable_torque=release_torque)
        except (ConnectionError, RuntimeError, OSError, serial.SerialException, termios.error) as e:
            logger.warning("%s: could not release torque cleanly (%s); closing the port anyway", self.ref, e)
            self._close_quietly()
        finally:
            self._device = None

    def _close_quietly(self) -> None:
        if self._device is not None:
            with contextlib.suppress(OSError, AttributeError, serial.SerialException):
                self._device.bus.port_handler.closePort()
            self._device = None

    def _make_device(self, *, with_calibration: bool = True) -> SOFollower | SOLeader:
        arm_id = f"{self.rig_id}_{self.side}"
        if not with_calibration:
            # An id with no file: LeRobot loads nothing (for inspecting an arm whose file may be
            # broken or belong to another arm).
            arm_id += ".inspect"
        calibration_dir = self._calibration_dir
        if self.role is Role.FOLLOWER:
            return SOFollower(SOFollowerRobotConfig(id=arm_id, calibration_dir=calibration_dir, port=self.port))
        return SOLeader(SOLeaderTeleopConfig(id=arm_id, calibration_dir=calibration_dir, port=self.port))

    def _install_port_handler(self, device: SOFollower | SOLeader) -> None:
        bus = device.bus
        handler = GuardedPortHandler(self.port, self.bus_config.reply_timeout_ms)
        bus.port_handler = handler
        bus.packet_handler = CheckedPacketHandler()
        # The SDK's group objects hold the port; rebuild them around the guarded one.
        bus.sync_reader = scs.GroupSyncRead(handler, bus.packet_handler, 0, 0)
        bus.sync_writer = scs.GroupSyncWrite(handler, bus.packet_handler, 0, 0)
        self._health_reader = scs.GroupSyncRead(handler, bus.packet_handler, HEALTH_ADDRESS, HEALTH_LENGTH)

    def _apply_calibration(self) -> ArmCalibration | None:  # the motors' calibration, if the file was written
        device, policy = self.device, self.calibration_config.on_mismatch
        apply = partial(apply_file, self.ref, device.bus, self.calibration_file, policy)
        previous = self._translate(apply, motor=None, what="apply calibration")
        device.calibration = device.bus.calibration
        return previous

    # --- I/O -------------------------------------------------------------------------------

    def read_joints(self) -> JointReading:
        """Present positions, within `bus.read_deadline_ms` or a MotorTimeoutError."""
        return self.collect_joints(self.request_joints())

    def request_joints(self) -> PendingRead:
        """Send the positions' sync read and return without waiting; `collect_joints` gets the reply.

        Several arms' requests can then be on their lines at once with no thread per arm: the
        control thread sends all of them, then collects each (measured on the virtual rig, two
        cores: four arms in 2.2 ms and 0.8 ms of CPU, against 2.7 ms and 1.7 ms with one worker
        thread per arm). Every request must be collected, even after another arm failed.
        """
        bus = self.device.bus
        handler = bus.port_handler
        start = time.monotonic()
        deadline_ms = handler.getCurrentTime() + self.bus_config.read_deadline_ms
        bus._setup_sync_reader(list(MOTOR_IDS.values()), _POSITION_ADDRESS, _POSITION_LENGTH)
        handler.deadline_ms = deadline_ms  # the reply's wait is set when the request goes out
        try:
            sent = self._translate(bus.sync_reader.txPacket, motor=None, what="send a read") == scs.COMM_SUCCESS
        except BaseException:
            handler.deadline_ms = None
            raise
        return PendingRead(start_s=start, deadline_ms=deadline_ms, sent=sent)

    def collect_joints(self, pending: PendingRead) -> JointReading:
        """The reply to `request_joints`; a failed first try is retried until the same deadline."""
        bus = self.device.bus
        handler = bus.port_handler
        values: dict[str, float] | None = None
        if pending.sent:
            handler.deadline_ms = pending.deadline_ms
            try:
                if self._translate(bus.sync_reader.rxPacket, motor=None, what="read") == scs.COMM_SUCCESS:
                    ids = MOTOR_IDS.values()
                    values = self._positions_from(
                        {i: bus.sync_reader.getData(i, _POSITION_ADDRESS, _POSITION_LENGTH) for i in ids}
                    )
            except MotorTimeoutError:
                pass  # retried below, within what is left of the deadline
            finally:
                handler.deadline_ms = None
        attempts = 1
        if values is None:
            values, retries = self._within_deadline(
                lambda: bus.sync_read("Present_Position", num_retry=0),
                silent_in(bus.sync_reader),
                deadline_ms=pending.deadline_ms,
            )
            attempts += retries
        end = time.monotonic()
        return JointReading(
            positions={j: float(values[j]) for j in JOINT_NAMES},
            t_s=(pending.start_s + end) / 2,
            bus_time_s=end - pending.start_s,
            attempts=attempts,
        )

    def _positions_from(self, raw: dict[int, int]) -> dict[str, float]:
        """Raw Present_Position by motor ID, decoded and normalised as LeRobot's `sync_read` does."""
        bus = self.device.bus
        normalized = bus._normalize(bus._decode_sign("Present_Position", raw))
        return {JOINT_NAMES[i - 1]: value for i, value in normalized.items()}

    def write_joints(self, goal: JointPositions) -> JointPositions:
        """Send goal positions (one sync write, no reply); returns what the motors were sent."""
        bus = self.device.bus
        unknown = set(goal) - set(JOINT_NAMES)
        if unknown:
            raise ValueError(f"{self.ref}: unknown joints {sorted(unknown)}; expected names from {JOINT_NAMES}")
        ids = {MOTOR_IDS[j]: float(v) for j, v in goal.items()}
        steps = bus._unnormalize(ids)
        for motor_id, value in steps.items():
            joint = JOINT_NAMES[motor_id - 1]
            cal = bus.calibration[joint]
            # The motors clamp goals to their position limits: say so in what we report.
            steps[motor_id] = max(cal.range_min, min(cal.range_max, value))
        self._translate(
            lambda: bus.sync_write("Goal_Position", {JOINT_NAMES[i - 1]: s for i, s in steps.items()}, normalize=False),
            motor=None,
            what="write goal positions",
        )
        sent = bus._normalize(steps)
        return {JOINT_NAMES[i - 1]: float(v) for i, v in sent.items()}

    def set_torque(self, enabled: bool) -> None:
        """Torque on (each motor holds where it is: the STS3215 latches its goal) or off, all six at once.

        One sync write, no reply, so it fits inside a control tick (LeRobot's `enable_torque` is twelve
        acknowledged writes). Used to drive a leader arm for a handover; a lost write shows as a leader
        that does not move (the handover's arrival check) or stays stiff (the exit releases it again,
        with LeRobot's retries).
        """
        bus = self.device.bus
        value = 1 if enabled else 0
        self._translate(
            lambda: bus.sync_write("Torque_Enable", dict.fromkeys(JOINT_NAMES, value), normalize=False),
            motor=None,
            what="switch torque " + ("on" if enabled else "off"),
        )

    def read_health(self) -> ArmHealth:
        """Status bits, temperature, load and voltage of all six motors in one sync read."""
        reader = self._health_reader
        if reader is None:
            raise ArmConnectionError(self.ref, "not connected", "call connect() first")

        def read() -> dict[str, bytes]:
            reader.clearParam()
            for joint in JOINT_NAMES:
                reader.addParam(MOTOR_IDS[joint])
            comm = reader.txRxPacket()
            if comm != scs.COMM_SUCCESS:
                raise ConnectionError(self.device.bus.packet_handler.getTxRxResult(comm))
            return {j: bytes(reader.data_dict[MOTOR_IDS[j]]) for j in JOINT_NAMES}

        raw, _ = self._within_deadline(read, silent_in(reader))
        motors = {joint: motor_health(data) for joint, data in raw.items()}
        health = ArmHealth(motors=motors, t_s=time.monotonic())
        self.last_health = health
        return health

    def health_due(self, now_s: float) -> bool:
        """Whether `poll_health(now_s)` would read the motors' status."""
        return self.bus_config.status_poll_period_s > 0 and now_s >= self._next_poll_s

    def poll_health(self, now_s: float | None = None) -> ArmHealth | None:
        """`read_health()` at most once per `bus.status_poll_period_s`; None when not due."""
        now = time.monotonic() if now_s is None else now_s
        if not self.health_due(now):
            return None
        self._next_poll_s = now + self.bus_config.status_poll_period_s
        return self.read_health()

    def raise_on_faults(self, health: ArmHealth) -> None:
        """Turn reported error bits into a MotorFaultError naming the first faulty motor."""
        for joint, errors in health.faults.items():
            raise MotorFaultError(
                self.ref,
                joint,
                errors,
                "let it cool down, check for a blocked joint or a squeezed object, then power-cycle the arm",
            )

    # --- guards (robot/feetech/bus_guards.py) -------------------------------------------------

    def _within_deadline(
        self, call: Callable[[], T], silent_motor: Callable[[], str | None], *, deadline_ms: float | None = None
    ) -> tuple[T, int]:
        """`within_deadline` on this arm's port: until `deadline_ms`, by default `bus.read_deadline_ms` from now."""
        handler = self.device.bus.port_handler
        if deadline_ms is None:
            deadline_ms = handler.getCurrentTime() + self.bus_config.read_deadline_ms
        return within_deadline(self.ref, handler, call, silent_motor, deadline_ms, self.bus_config.read_deadline_ms)

    def _translate(self, call: Callable[[], T], *, motor: str | None, what: str) -> T:
        """`translate` for this arm (its port, once open, gets its busy flag cleared)."""
        handler = self._device.bus.port_handler if self._device else None
        return translate(self.ref, handler, call, motor=motor, what=what)
