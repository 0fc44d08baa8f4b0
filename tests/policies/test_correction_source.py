"""The correction source's two edge cases a person meets, on made-up observations and a stand-in rig.

The rig is replaced below its seam (tests/robot/test_leader_drive.py drives real emulated leaders;
tests/policies/test_correction_e2e.py the whole command): here only what the source decides.
- Leaders that cannot be driven (a leader's bus fails at the take-over): the followers hold the
  goal they were last sent, tick after tick, and the person never gets arms the leaders were not
  brought to; the hand back returns them to the policy.
- Leaders let go with their grippers closed after a correction: the squeeze gesture does not take
  over again by itself; a real squeeze after the grippers were open does.
"""

from collections.abc import Mapping
from dataclasses import replace
from types import SimpleNamespace

import numpy as np

from policies.correction import Control, CorrectionConfig, CorrectionSource
from policies.rollout import RolloutSource
from robot.arm import JointReading
from robot.errors import RobotError
from robot.joint_values import JointValues
from robot.joints import GRIPPER, JOINT_NAMES, Side
from tests.support.observations import Driver, observation, tick


class StuckDrive:
    """Leaders whose torque cannot be switched on."""

    driving = False

    def begin(self, present: Mapping) -> None:
        raise RobotError("left_leader: the port went away")

    def release(self) -> None:
        self.driving = False


class Rig:
    """What the source asks of a rig: leaders, the guards' last goals, transitions, the rate."""

    has_leaders = True
    config = SimpleNamespace(fps=30)

    def __init__(self, drive: object) -> None:
        self.drive = drive
        self.guards = {side: SimpleNamespace(last_sent=dict.fromkeys(JOINT_NAMES, 5.0)) for side in Side}
        self.transitions: list[str] = []

    def leader_drive(self) -> object:
        return self.drive

    def begin_transition(self, reason: str) -> None:
        self.transitions.append(reason)


def with_leaders(index: int, gripper: float):
    """Tick `index`'s observation, both leaders still, their grippers at `gripper` %."""
    at = observation(t_s=index / 30)
    reading = JointReading({j: (gripper if j == GRIPPER else 0.0) for j in JOINT_NAMES}, at.t_s, 0.001, 1)
    return replace(at, leaders=dict.fromkeys(Side, reading))


def source(rig: Rig, **config: object) -> tuple[CorrectionSource, list[str]]:
    said: list[str] = []
    rollout = RolloutSource(Driver(), lambda now: True, on_transition=rig.begin_transition)
    return CorrectionSource(rollout, rig, CorrectionConfig(enabled=True, **config), on_event=said.append), said


def test_leaders_that_cannot_be_driven_leave_the_followers_holding_until_the_hand_back():
    rig = Rig(StuckDrive())
    correction, said = source(rig, handover_timeout_s=0.5)
    correction.action(with_leaders(0, 50.0), tick(0))  # the policy acts
    correction.toggle()
    held = JointValues(np.full((2, 6), 5.0))
    for index in range(1, 61):  # two seconds, four times the handover timeout
        assert correction.action(with_leaders(index, 50.0), tick(index)) == held
        assert correction.control is Control.HANDOVER
    assert any("cannot be driven" in line and "hand back with c or Tab" in line for line in said), said
    assert not any("you have the arms" in line for line in said), said
    correction.toggle()
    assert set(correction.action(with_leaders(61, 50.0), tick(61)).vector) == {99.0}  # the policy again
    assert correction.control is Control.POLICY


class Drive:
    """Leaders that are where the followers are as soon as they are driven."""

    driving = False

    def begin(self, present: Mapping) -> None:
        self.driving = True

    def arrived(self, *args: object) -> bool:
        return True

    def release(self) -> None:
        self.driving = False


def test_leaders_let_go_with_closed_grippers_do_not_take_over_again():
    rig = Rig(Drive())
    correction, _ = source(rig)
    correction.action(with_leaders(0, 50.0), tick(0))
    correction.toggle()
    correction.action(with_leaders(1, 50.0), tick(1))  # handover: the leaders are there at once
    correction.action(with_leaders(2, 50.0), tick(2))
    assert correction.control is Control.PERSON
    correction.toggle()  # handed back, the person lets go with the grippers squeezed shut
    for index in range(3, 93):  # three seconds of closed, still grippers
        correction.action(with_leaders(index, 2.0), tick(index))
        assert correction.control is Control.POLICY, f"tick {index}: a resting leader took over"
    for index in range(93, 96):  # open them ...
        correction.action(with_leaders(index, 50.0), tick(index))
    for index in range(96, 140):  # ... and squeeze and hold: that is the gesture
        correction.action(with_leaders(index, 2.0), tick(index))
    assert correction.control is not Control.POLICY
