"""Moving a goal toward a target at a bounded speed (engaging teleop, going to rest, e-stop)."""

import math
from collections.abc import Mapping


def step_toward(current: Mapping[str, float], target: Mapping[str, float], max_step: float) -> dict[str, float]:
    """Each joint moved at most `max_step` from `current` toward `target`."""
    out = {}
    for joint, value in current.items():
        delta = target[joint] - value
        out[joint] = target[joint] if abs(delta) <= max_step else value + math.copysign(max_step, delta)
    return out


def max_difference(a: Mapping[str, float], b: Mapping[str, float], joints: tuple[str, ...] | None = None) -> float:
    """The largest |a - b| over `joints` (default: every joint of `a`)."""
    names = joints or tuple(a)
    return max(abs(a[j] - b[j]) for j in names)
