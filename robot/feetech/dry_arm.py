"""Dry arms: a follower with no bus. Every command is checked and logged; nothing is sent anywhere.

    arm = DryArm(Side.LEFT, calibration, start={"shoulder_pan": 0.0, ...})
    rig = BimanualRig(config, ports, arm_factory=dry_arm_factory(calibrations, starts))
    ...                                   # the rig's safety layer runs exactly as with real arms
    arm.log[-1].sent                      # what a real arm would have put on its bus

A dry arm does what `SO101Arm.write_joints` does to a goal before it reaches the wire (LeRobot's
normalisation to encoder steps, the motors' position limits) with LeRobot's own bus object, never
connected, so the values it reports are the ones a real arm would have sent. It is an ideal
follower: `read_joints` returns the last goal, as if the motors arrived at once. Limits come from
the calibration it is given, so the rig derives the same safety limits as for the real arms.
"""

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from lerobot.motors import MotorCalibration
from lerobot.robots.so_follower import SOFollower, SOFollowerRobotConfig

from robot.arm import ArmHealth, JointPositions, JointReading
from robot.errors import ArmConnectionError, ArmRef
from robot.joint_values import JointValues
from robot.joints import GRIPPER, JOINT_NAMES, MOTOR_IDS, Role, Side, arm_name

logger = logging.getLogger(__name__)
DRY_PORT = "dry"  # the port name dry arms report in errors and logs


@dataclass(frozen=True)
class DryCommand:
    """One command a dry arm received."""

    t_s: float  # monotonic time of the write, s
    goal: JointPositions  # what the rig asked for (after its safety layer)
    sent: JointPositions  # what a real arm would have written (encoder steps, motor limits), same units


class DryArm:
    """One follower arm without a bus (the `Arm` protocol). Not thread-safe: one thread drives it."""

    def __init__(
        self,
        side: Side,
        calibration: Mapping[str, MotorCalibration],
        *,
        start: Mapping[str, float] | None = None,
        calibration_dir: Path | None = None,
    ) -> None:
        """A dry follower.

        Args:
            side: which arm of the pair.
            calibration: LeRobot's calibration of the arm it stands in for (its limits).
            start: joint positions it reports before the first command; default: the middle of
                every range (0 degrees, gripper 50).
            calibration_dir: where LeRobot would keep its file (only used to build LeRobot's object).
        """
        self.side = side
        self.role = Role.FOLLOWER
        self.ref = ArmRef(arm_name(side, Role.FOLLOWER), DRY_PORT)
        missing = [j for j in JOINT_NAMES if j not in calibration]
        if missing:
            raise ArmConnectionError(self.ref, f"no calibration for {', '.join(missing)}", "run so101-calibrate")
        config = SOFollowerRobotConfig(id=f"dry_{side}", calibration_dir=calibration_dir, port=DRY_PORT)
        # LeRobot's follower, never connected: its bus holds the motor table and the normalisation.
        self.device = SOFollower(config)
        self.device.bus.calibration = dict(calibration)
        default = {j: 50.0 if j == GRIPPER else 0.0 for j in JOINT_NAMES}
        self._position: JointPositions = {j: float((start or default)[j]) for j in JOINT_NAMES}
        self.log: list[DryCommand] = []
        self.connected = False

    @property
    def name(self) -> str:
        """e.g. "left_follower"."""
        return self.ref.name

    def __repr__(self) -> str:
        return f"DryArm({self.ref})"

    def connect(self) -> None:
        """Nothing to open."""
        self.connected = True

    def disconnect(self, *, release_torque: bool = True) -> None:
        """Nothing to close."""
        self.connected = False

    def set_pose(self, positions: Mapping[str, float]) -> None:
        """Put the arm somewhere (where a replay's episode starts), as a person moving it by hand would."""
        self._position = {j: float(positions[j]) for j in JOINT_NAMES}

    def read_joints(self) -> JointReading:
        """The last goal (an ideal follower), or the start pose."""
        return JointReading(positions=dict(self._position), t_s=time.monotonic(), bus_time_s=0.0, attempts=1)

    def request_joints(self) -> None:
        """Nothing to send: `collect_joints` answers at once."""

    def collect_joints(self, pending: None) -> JointReading:
        """The same as `read_joints`."""
        return self.read_joints()

    def health_due(self, now_s: float) -> bool:
        """Never: a dry arm has no status to poll."""
        return False

    def write_joints(self, goal: JointPositions) -> JointPositions:
        """What a real arm would send for `goal`: encoder steps within the motors' limits, in joint units."""
        unknown = set(goal) - set(JOINT_NAMES)
        if unknown:
            raise ValueError(f"{self.ref}: unknown joints {sorted(unknown)}; expected names from {JOINT_NAMES}")
        bus = self.device.bus
        steps = bus._unnormalize({MOTOR_IDS[j]: float(v) for j, v in goal.items()})
        for motor_id, value in steps.items():
            limits = bus.calibration[JOINT_NAMES[motor_id - 1]]
            steps[motor_id] = max(limits.range_min, min(limits.range_max, value))
        sent = {JOINT_NAMES[i - 1]: float(v) for i, v in bus._normalize(steps).items()}
        self.log.append(DryCommand(time.monotonic(), {j: float(v) for j, v in goal.items()}, sent))
        self._position.update(sent)
        return sent

    def read_health(self) -> ArmHealth | None:
        """No motors, no health."""
        return None

    def poll_health(self, now_s: float | None = None) -> ArmHealth | None:
        """Never due: a dry arm has no temperature or load."""
        return None


def dry_arm_factory(
    calibrations: Mapping[Side, Mapping[str, MotorCalibration]],
    starts: JointValues | None = None,
    calibration_dir: Path | None = None,
) -> Callable[[Side, Role, str], DryArm]:
    """An `arm_factory` for `BimanualRig` that makes dry followers (leaders are not supported)."""

    def make(side: Side, role: Role, port: str) -> DryArm:
        if role is not Role.FOLLOWER:
            raise ArmConnectionError(
                ArmRef(arm_name(side, role), DRY_PORT), "dry arms stand in for followers only", "use with_leaders=False"
            )
        start = None if starts is None else starts.side(side)
        return DryArm(side, calibrations[side], start=start, calibration_dir=calibration_dir)

    return make
