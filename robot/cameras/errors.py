"""Camera errors: what failed, on which camera, and the next step.

CameraError
├── CameraConfigError        a config value, or a format the device will not deliver
├── CameraNotFoundError      no such device, or it will not open
├── CameraDisconnectedError  not connected, or lost and not recovered by reconnecting
├── CameraStaleError         connected, but no new frame within the bound (a frozen camera)
└── CameraReadError          one failed read; the capture thread retries and reconnects
"""

from robot.errors import RobotError

DOCTOR = "run so101-doctor"
CHECK_DEVICE = (
    "check the USB cable and the device path with `v4l2-ctl --list-devices` "
    "(prefer /dev/v4l/by-id/... paths: they survive replugging), then run so101-doctor"
)
FIX_CONFIG = "fix the camera's entry in the rig config"


class CameraError(RobotError):
    """Base of every camera error; the message names the camera and the next step."""

    def __init__(self, camera: str, problem: str, next_step: str = DOCTOR) -> None:
        self.camera = camera
        self.problem = problem
        self.next_step = next_step
        super().__init__(f"camera {camera!r}: {problem}. Next step: {next_step}.")


class CameraConfigError(CameraError, ValueError):
    """A config value is not allowed, or the device will not deliver the requested format."""

    def __init__(self, camera: str, problem: str, next_step: str = FIX_CONFIG) -> None:
        super().__init__(camera, problem, next_step)


class CameraNotFoundError(CameraError):
    """The device does not exist or will not open."""

    def __init__(self, camera: str, problem: str, next_step: str = CHECK_DEVICE) -> None:
        super().__init__(camera, problem, next_step)


class CameraDisconnectedError(CameraError):
    """The camera is not connected, or it was lost and reconnecting did not bring it back."""

    def __init__(self, camera: str, problem: str, next_step: str = CHECK_DEVICE) -> None:
        super().__init__(camera, problem, next_step)


class CameraStaleError(CameraError):
    """The camera is connected but has delivered no new frame within the allowed age."""


class CameraReadError(CameraError):
    """One read failed (a select() timeout, a lost USB packet); the capture thread retries."""
