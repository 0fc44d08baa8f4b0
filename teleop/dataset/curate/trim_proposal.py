"""A trim proposed from the motion: an episode's idle head and tail cut, a little stillness kept.

A demonstration often starts with the person settling their hands and ends with them letting go:
seconds in which nothing moves, which teach a policy to wait. The proposal keeps the frames from a
short margin before the first motion to a short margin after the last (idle by the quality card's
rule, `sidecar.idle_frames`); the person adjusts it on the review page's timeline, or gives their
own span to `so101-edit --trim`.

A leaf of the dataset layout (tests/test_layers.py, DATASET_LAYOUT): the review page proposes the
same trim as so101-edit, so this imports nothing of the product but `sidecar`.
"""

from collections.abc import Sequence

import numpy as np

from teleop.dataset.sidecar import idle_frames

MARGIN_S = 0.5  # stillness kept before the first and after the last motion, s


def propose_trim(states: np.ndarray, names: Sequence[str], fps: float, margin_s: float = MARGIN_S) -> tuple[int, int]:
    """(start, stop): the frames worth keeping of one episode (`states`: one row per frame, columns `names`).

    An episode in which nothing moves is kept whole: there is no motion to keep, and dropping it is
    the person's call (`--drop`), not a trim's.
    """
    frames = len(states)
    moving = np.flatnonzero(~idle_frames(states, names, fps))
    if frames < 2 or len(moving) == 0:
        return 0, frames
    margin = round(margin_s * fps)
    return max(0, int(moving[0]) - margin), min(frames, int(moving[-1]) + 1 + margin)
