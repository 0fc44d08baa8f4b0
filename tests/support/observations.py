"""Made-up rig observations and loop ticks, for action sources tested without a rig.

observation(offset=5.0)             # both arms' joints (left 10+i, right 20+i, plus offset), no frames
observation(cameras=("overhead",))  # with one synced 4x6 frame per camera
tick(3)                             # the loop's fourth tick at 30 Hz
Driver()                            # a policy that always asks for 99 everywhere once reset
"""

from collections.abc import Mapping

import numpy as np

from robot.arm import JointReading
from robot.cameras.frame import Frame
from robot.cameras.sync_stats import SyncedFrames
from robot.joint_values import JointValues
from robot.joints import JOINT_NAMES, Side
from robot.loop_timer import Tick
from robot.rig import Observation


def observation(offset: float = 0.0, t_s: float = 1.0, cameras: tuple[str, ...] = ()) -> Observation:
    """Both followers at distinct poses (left joint i at 10+i, right at 20+i, plus `offset`), read at `t_s`."""

    def reading(side: Side) -> JointReading:
        base = 10.0 if side is Side.LEFT else 20.0
        return JointReading({j: base + i + offset for i, j in enumerate(JOINT_NAMES)}, t_s, 0.001, 1)

    frames = None
    if cameras:
        made = {name: Frame(name, np.full((4, 6, 3), i, dtype=np.uint8), t_s, 7) for i, name in enumerate(cameras)}
        frames = SyncedFrames(t_s, made, 0.0, dict.fromkeys(cameras, 0.0), dict.fromkeys(cameras, 0), frozenset(), 0.0)
    return Observation(t_s=t_s, followers={s: reading(s) for s in Side}, leaders={}, bus_time_s=0.001, frames=frames)


def tick(index: int) -> Tick:
    """Tick `index` of a 30 Hz loop that has never overrun."""
    return Tick(index, index / 30, index / 30, 0)


class Driver:
    """A policy that always asks for the same far goal once reset."""

    def __init__(self) -> None:
        self.resets = 0
        self.acted = False

    def action(self, observation, tick) -> JointValues:
        self.acted = True
        return JointValues(np.full((2, 6), 99.0))

    def reset(self) -> None:
        self.resets += 1
        self.acted = False

    @property
    def has_acted(self) -> bool:
        return self.acted

    def facts(self) -> Mapping[str, float]:
        return {}
