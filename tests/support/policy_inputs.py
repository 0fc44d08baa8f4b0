"""Policy inputs made up for a test: the rig's cameras and 12 joints, seeded per step."""

import time

import numpy as np

from policies.engine import PolicyInput
from policies.testing.tiny_policies import TEST_CAMERAS


def synthetic_input(step: int) -> PolicyInput:
    """Random frames and a ramp of joints for step `step`, stamped now."""
    rng = np.random.default_rng(step)
    images = {name: rng.integers(0, 255, (h, w, 3), dtype=np.uint8) for name, h, w in TEST_CAMERAS}
    return PolicyInput(np.linspace(-20, 20, 12, dtype=np.float32) + step, images, "Fold the cloth", time.monotonic())
