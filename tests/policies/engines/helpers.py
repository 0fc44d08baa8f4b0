"""Driving an engine at a fixed rate without a rig: inputs whose time is the tick index, a paced loop."""

import time
from dataclasses import dataclass

import numpy as np

from policies.engine import EngineAction, InferenceEngine, PolicyInput
from robot.loop_timer import LoopTimer


def inputs_at(tick: int) -> PolicyInput:
    """An observation for `tick` (its time_s is the tick index, so a predictor's log names the tick)."""
    return PolicyInput(state=np.zeros(12, dtype=np.float32), images={}, task="Fold the cloth", time_s=float(tick))


@dataclass(frozen=True)
class Served:
    tick: int
    action: EngineAction | None
    call_s: float  # how long next_action took


def drive(engine: InferenceEngine, ticks: int, fps: float = 30.0) -> list[Served]:
    """Call next_action once per tick for `ticks` ticks, paced on absolute deadlines."""
    timer = LoopTimer(fps)
    timer.start()
    served = []
    for _ in range(ticks):
        tick = timer.wait()
        start = time.perf_counter()
        action = engine.next_action(inputs_at(tick.index), tick.index)
        served.append(Served(tick.index, action, time.perf_counter() - start))
    return served
