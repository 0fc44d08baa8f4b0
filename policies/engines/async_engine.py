"""Asynchronous chunking: the next chunk is computed on a worker thread while the current one executes.

    tick:   ... k ............................................ k + latency ...........
    queue:  [a a a a a a a a]  depth <= threshold -> request (observation of tick k)
                  executing the old chunk meanwhile ...         new chunk arrives:
                                                                 skip the actions already in the past,
                                                                 cross-fade the overlap, queue the rest

The loop never waits (see background.py); a tick with nothing queued is starved (the source holds
the last commanded position). No tick starves while a chunk's latency is below the execution time
it has left when it arrives: with one chunk in flight, its first `latency * fps` actions are past
on arrival and the rest must last until the next chunk arrives, so latencies up to half a chunk
are hidden (50 actions at 30 FPS: up to 0.83 s; full ACT, 100 actions: up to 1.67 s). Longer
ones starve, counted. The blend of the overlap is defined in blend.py (linear cross-fade by
default). ACT's chunked execution is this engine with ACT's `n_action_steps`.

    engine = AsyncEngine(predictor, fps=30)   # threshold from the measured latency
    engine.prime(first_inputs)                 # optional: the first chunk before the loop starts
    action = engine.next_action(inputs, tick.index)
"""

import numpy as np

from policies.engine import ChunkPredictor
from policies.engines.background import BackgroundEngine, ChunkRequest
from policies.engines.blend import BlendMode


class AsyncEngine(BackgroundEngine):
    """Background chunking with a refill threshold and a cross-faded overlap."""

    name = "async"

    def __init__(
        self,
        predictor: ChunkPredictor,
        *,
        fps: float,
        n_action_steps: int | None = None,
        refill_threshold: int | None = None,
        latency_margin: float = 1.5,
        expected_latency_s: float | None = None,
        blend: BlendMode = BlendMode.CROSSFADE,
        blend_steps: int | None = None,
    ) -> None:
        super().__init__(
            predictor,
            fps=fps,
            n_action_steps=n_action_steps,
            refill_threshold=refill_threshold,
            latency_margin=latency_margin,
            expected_latency_s=expected_latency_s,
        )
        self.blend = blend
        self.blend_steps = blend_steps

    def _merge(self, chunk: np.ndarray, request: ChunkRequest, latency_s: float, skip: int) -> None:
        self.queue.merge(
            chunk,
            chunk_id=request.chunk_id,
            latency_s=latency_s,
            skip=skip,
            blend=self.blend,
            blend_steps=self.blend_steps,
        )
