"""Motor setup for one arm: give each motor its ID and 1 Mbps, one motor at a time, then check the chain.

    connect only the gripper -> census: exactly one motor? -> LeRobot's setup_motor (ID 6, 1 Mbps)
    connect only wrist_roll  -> ...                        -> ID 5
    ...
    connect the whole chain  -> census: ids 1..6 at 1 Mbps, each exactly once

Every new STS3215 answers as ID 1 at 1 Mbps, so the person connects one motor at a time (LeRobot's
`lerobot-setup-motors` does the same, gripper first). LeRobot's own scan takes the first motor it
hears; here a census counts every reply first, so two motors on the cable at once (or two sharing
an ID) are refused instead of one of them being renumbered at random.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from robot.errors import ArmRef, MotorError
from robot.feetech.motor_census import Census, census_expecting
from robot.joints import JOINT_NAMES, MOTOR_IDS

DEFAULT_BAUD = 1_000_000  # what LeRobot's SO classes talk at, and what setup leaves every motor at
CHAIN_IDS = tuple(sorted(MOTOR_IDS.values()))
SETUP_ATTEMPTS = 3  # LeRobot's setup_motor on one motor, each try from where the motor answers then


class MotorSetupError(MotorError):
    """Motor setup stopped: nothing more was changed, and the line says what to fix."""


class ArmAlreadySetUpError(MotorSetupError):
    """The arm already answers as a set-up chain: setup would only renumber motors that are right."""


class MotorCue(Protocol):
    """Who connects the motors: a person at the arm, or the virtual rig's hands."""

    def connect_only(self, joint: str) -> None:
        """Return once only `joint`'s motor is on the board's cable."""
        ...

    def connect_all(self) -> None:
        """Return once the arm's whole daisy chain is connected again."""
        ...


@dataclass(frozen=True)
class MotorAssigned:
    """One motor set up: where it was found, and the ID it has now (at 1 Mbps)."""

    joint: str
    found_id: int
    found_baud: int
    motor_id: int


def _again(ref: ArmRef) -> str:
    return f"so101-setup --arms={ref.name}"


def already_set_up(census: Census) -> bool:
    """Six motors answer at 1 Mbps, as ids 1..6, each once, and nothing collides."""
    at_default = census.at(DEFAULT_BAUD)
    return at_default is not None and tuple(sorted(at_default.ids)) == CHAIN_IDS and not census.garbled


def _one_motor(census: Census) -> bool:
    return census.replies == 1 and not census.garbled


def _only(motor_id: int) -> Callable[[Census], bool]:
    def answers(census: Census) -> bool:
        at_default = census.at(DEFAULT_BAUD)
        return at_default is not None and at_default.ids == (motor_id,)

    return answers


def _the_one_motor(ref: ArmRef, joint: str, census: Census) -> tuple[int, int]:
    if census.replies == 0 and not census.garbled:
        raise MotorSetupError(
            ref,
            joint,
            "no motor answers at any baud rate",
            f"connect the {joint} motor (only it) to the board, check the board's power, then run {_again(ref)}",
        )
    if census.replies > 1 or census.garbled:
        raise MotorSetupError(
            ref,
            joint,
            f"more than one motor answers ({census.describe()}), so it cannot tell which one is the {joint}",
            f"unplug every other motor's cable so only the {joint} motor is connected, then run {_again(ref)}",
        )
    (found,) = [(b.baud, b.ids[0]) for b in census.by_baud if b.ids]
    return found


def _set_up_one(ref: ArmRef, joint: str, bus: Any, baud: int, motor_id: int, say: Callable[[str], None]) -> None:
    """LeRobot's setup_motor on the one connected motor, tried again when a status packet is lost.

    LeRobot writes without retrying; a noisy cable or a busy host loses a reply now and then. Each
    try starts from where the motor answers then (an ID or baud rate may have been written).
    """
    for attempt in range(1, SETUP_ATTEMPTS + 1):
        try:
            bus.setup_motor(joint, initial_baudrate=baud, initial_id=motor_id)
            return
        except (RuntimeError, ConnectionError, OSError) as e:
            failure = e
        now = census_expecting(bus, _one_motor)  # an ID or baud written before the reply was lost
        if attempt == SETUP_ATTEMPTS or not _one_motor(now):
            break
        baud, motor_id = next((b.baud, b.ids[0]) for b in now.by_baud if b.ids)
        say(
            f"{joint}: LeRobot's setup_motor got no answer ({failure}); the motor answers as id {motor_id} "
            f"at {baud} baud, trying again ({attempt + 1} of {SETUP_ATTEMPTS})"
        )
    raise MotorSetupError(
        ref,
        joint,
        f"LeRobot's setup_motor failed {attempt} time(s) ({failure}); then {now.describe()} answered",
        f"check the {joint} motor's cable, then run {_again(ref)}",
    ) from failure


def setup_arm(ref: ArmRef, bus: Any, cue: MotorCue, say: Callable[[str], None] = print) -> list[MotorAssigned]:
    """Set every motor of one arm (LeRobot's bus `bus`, opened without a handshake); gripper first.

    Raises:
        ArmAlreadySetUpError: the chain already answers as ids 1..6 at 1 Mbps (nothing written).
        MotorSetupError: no motor, or more than one, answered for a joint; or the chain is not
            complete afterwards. Motors set before the failure keep their new IDs (setup can rerun).
    """
    # A chain whose replies come late must not look new (setup would renumber it): "not set up" is
    # listened for again, patiently.
    if already_set_up(census_expecting(bus, already_set_up, [DEFAULT_BAUD])):
        raise ArmAlreadySetUpError(
            ref,
            None,
            "already answers as a set-up chain (ids 1-6 at 1 Mbps); nothing was changed",
            f"calibrate it: so101-calibrate --arms={ref.name}",
        )
    assigned = []
    for joint in reversed(JOINT_NAMES):
        cue.connect_only(joint)
        baud, found_id = _the_one_motor(ref, joint, census_expecting(bus, _one_motor))
        _set_up_one(ref, joint, bus, baud, found_id, say)
        renumbered = _only(MOTOR_IDS[joint])
        if not renumbered(census_expecting(bus, renumbered, [DEFAULT_BAUD])):
            raise MotorSetupError(
                ref,
                joint,
                f"after setup it does not answer as id {MOTOR_IDS[joint]} at 1 Mbps",
                f"power-cycle the arm's board, then run {_again(ref)}",
            )
        assigned.append(MotorAssigned(joint, found_id, baud, MOTOR_IDS[joint]))
        say(f"{joint}: id {found_id} at {baud} baud -> id {MOTOR_IDS[joint]} at 1 Mbps")
    cue.connect_all()
    chain = census_expecting(bus, already_set_up, [DEFAULT_BAUD])
    if not already_set_up(chain):
        raise MotorSetupError(
            ref,
            None,
            f"the connected chain answers as {chain.describe()}, not ids 1-6 once each",
            "check each daisy-chain cable between the motors (a loose one cuts off every motor after it), "
            "then run so101-doctor --config_path=<rig file>",
        )
    return assigned
