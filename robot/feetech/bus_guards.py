"""Guards around LeRobot/SDK bus calls: typed errors, retries within a deadline, the silent motor.

The vendor SDK reports failures as exceptions of every kind (pyserial's, OSError, IndexError on a
reply it failed to validate, RuntimeError with the motor's error bits) and LeRobot retries a fixed
number of times with a fixed wait. A 30 Hz loop needs one typed error naming the arm and motor,
with the next step, and retries bounded by an absolute deadline.
"""

import termios
from collections.abc import Callable

import scservo_sdk as scs
import serial

from robot.errors import ArmRef, BusDisconnectedError, MotorError, MotorFaultError, MotorTimeoutError
from robot.feetech.port import GuardedPortHandler
from robot.joints import JOINT_NAMES

DOCTOR = "run so101-doctor"  # the next step when nothing more specific applies


def silent_in(reader: scs.GroupSyncRead) -> Callable[[], str | None]:
    """After a failed sync read: the first motor with no data is the one that did not answer."""

    def first_silent() -> str | None:
        for motor_id, data in reader.data_dict.items():
            if not data and 1 <= motor_id <= len(JOINT_NAMES):
                return JOINT_NAMES[motor_id - 1]
        return None

    return first_silent


def within_deadline[T](
    ref: ArmRef,
    handler: GuardedPortHandler,
    call: Callable[[], T],
    silent_motor: Callable[[], str | None],
    deadline_ms: float,
    limit_ms: float,
) -> tuple[T, int]:
    """Retry `call` on communication failures until `deadline_ms` (port clock), then raise.

    Returns (the result, attempts). `limit_ms` is the configured read deadline, for the message.
    """
    attempts = 0
    while True:
        attempts += 1
        handler.deadline_ms = deadline_ms
        try:
            return translate(ref, handler, call, motor=None, what="read"), attempts
        except MotorTimeoutError as e:
            failure = e
        finally:
            handler.deadline_ms = None
        if handler.getCurrentTime() >= deadline_ms:
            raise MotorTimeoutError(
                ref,
                silent_motor(),
                f"no valid reply within {limit_ms:.0f} ms ({attempts} attempts; last: {failure})",
                "check that motor's cable and the arm's power; " + DOCTOR,
            ) from failure


def translate[T](
    ref: ArmRef, handler: GuardedPortHandler | None, call: Callable[[], T], *, motor: str | None, what: str
) -> T:
    """Run a LeRobot/SDK call, turning its exceptions into typed errors."""
    try:
        return call()
    except (serial.SerialException, OSError, termios.error) as e:
        if isinstance(e, ConnectionError):
            raise MotorTimeoutError(ref, motor, f"failed to {what}: {e}", "check cables; " + DOCTOR) from e
        raise BusDisconnectedError(
            ref,
            f"the port went away while trying to {what} ({e})",
            "check the USB cable, then reconnect",
        ) from e
    except IndexError as e:
        # The vendor SDK indexes into a reply it failed to validate (a late or garbled packet).
        raise MotorTimeoutError(ref, motor, f"garbled reply while trying to {what} ({e})", DOCTOR) from e
    except RuntimeError as e:
        if "RxPacketError" in str(e):
            # A READ/WRITE status packet carried hardware error bits.
            raise MotorFaultError(
                ref,
                motor or "?",
                [str(e).rsplit("]", 1)[-1].strip()],
                "power-cycle the arm; " + DOCTOR,
            ) from e
        raise MotorError(ref, motor, f"failed to {what}: {e}", DOCTOR) from e
    finally:
        # The SDK leaves its busy flag set when an exception escapes mid-transaction.
        if handler is not None:
            handler.is_using = False
