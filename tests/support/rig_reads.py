"""Reading an in-process virtual rig in tests: engage a connected rig, and each motor's torque and goal."""

import time

from robot.rig import BimanualRig
from robot.virtual.rig_model import VirtualRigModel


def engage(rig: BimanualRig) -> None:
    """End the connect transition by commanding the pose the followers are in (the normal caps apply after)."""
    for _ in range(100):
        rig.act(rig.observe().state())
        if not rig.in_transition:
            return
        time.sleep(1 / 30)
    raise AssertionError("the connect transition did not end on a still arm")


def torque(model: VirtualRigModel, arm: str) -> list[bool]:
    """Each motor's Torque_Enable, in joint order."""
    return [bool(m["torque_enabled"]) for m in model.state(arm)[arm]]


def goals(model: VirtualRigModel, arm: str) -> list[int]:
    """Each motor's Goal_Position register, encoder steps, in joint order."""
    return [int(m["goal_position"]) for m in model.state(arm)[arm]]
