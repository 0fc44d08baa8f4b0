"""What a port that will not open means, as a typed error with the next step."""

from robot.errors import ArmConnectionError, ArmRef, PortNotFoundError
from robot.feetech.bus_guards import DOCTOR


def open_error(ref: ArmRef, cause: BaseException) -> ArmConnectionError:
    """The error for arm `ref` whose port failed to open with `cause` (pyserial's or the OS's)."""
    text = str(cause)
    if "No such file" in text or "Errno 2" in text:
        return PortNotFoundError(
            ref,
            "no such device",
            "check the USB cable and power; list ports with `ls -l /dev/serial/by-id/`, or " + DOCTOR,
        )
    if "Permission denied" in text or "Errno 13" in text:
        return ArmConnectionError(
            ref, "permission denied", "add yourself to the dialout group (`sudo usermod -aG dialout $USER`)"
        )
    return ArmConnectionError(ref, f"cannot open the port ({text})", DOCTOR)
