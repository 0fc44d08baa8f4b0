"""How a new chunk takes over from the actions still queued: a defined blend of the overlap.

When a chunk arrives, the actions of the previous chunk not yet executed (`old`, r actions) and the
new chunk's actions for the same ticks (`new`, after the ones already in the past are skipped)
describe the same future. With L = min(r, len(new), blend_steps) overlapping ticks:

    crossfade:  queued[j] = (1 - w_j) * old[j] + w_j * new[j],   w_j = (j + 1) / (L + 1),  j < L
                queued[j] = new[j]                                                          j >= L
    replace:    queued = new   (what real-time chunking wants: the model already blended in the prefix)

For L = 4 the new chunk's weights are 0.2, 0.4, 0.6, 0.8, then 1: the first queued action is still
mostly the old plan (the motion continues where it was), the last blended one mostly the new. Old
actions beyond the new chunk's end are dropped: the newest plan decides what happens next.
"""

from enum import StrEnum

import numpy as np


class BlendMode(StrEnum):
    """How the overlap of the queued actions and a new chunk is resolved."""

    CROSSFADE = "crossfade"  # linear cross-fade from the old actions to the new over the overlap
    REPLACE = "replace"  # the new chunk replaces the queued actions at once


def crossfade_weights(overlap: int) -> np.ndarray:
    """The new chunk's weight at each of `overlap` blended ticks: (j + 1) / (overlap + 1)."""
    if overlap < 0:
        raise ValueError(f"overlap={overlap}: must be >= 0")
    return (np.arange(overlap, dtype=np.float64) + 1.0) / (overlap + 1.0)


def blend_overlap(
    old: np.ndarray, new: np.ndarray, mode: BlendMode = BlendMode.CROSSFADE, blend_steps: int | None = None
) -> np.ndarray:
    """The actions to queue: `new` (m, d) with its first ticks blended from `old` (r, d); float32 (m, d).

    Args:
        old: the queued actions not yet executed, oldest first (may be empty).
        new: the new chunk's actions from the current tick on.
        mode: crossfade or replace.
        blend_steps: blend at most this many ticks (None: the whole overlap).
    """
    merged = np.array(new, dtype=np.float32, copy=True)
    if mode is BlendMode.REPLACE or len(old) == 0 or len(new) == 0:
        return merged
    overlap = min(len(old), len(new), len(new) if blend_steps is None else blend_steps)
    if overlap <= 0:
        return merged
    weights = crossfade_weights(overlap)[:, None]
    head = (1.0 - weights) * np.asarray(old[:overlap], dtype=np.float64) + weights * np.asarray(
        new[:overlap], dtype=np.float64
    )
    merged[:overlap] = head.astype(np.float32)
    return merged
