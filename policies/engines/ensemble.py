"""ACT's temporal ensembling: one chunk per tick, every tick's action a weighted mean of all its predictions.

    tick k:  chunk_k = predictor(inputs_k)                 (on the control thread: blocks)
             action_k = Σ_i w_i · chunk_(k-m+1+i)[m-1-i] / Σ_i w_i,   i = 0 (oldest) .. m-1 (newest)
             w_i = exp(-coeff · i),   m = min(k + 1, chunk_size) chunks cover tick k

These are the semantics of LeRobot's `ACTTemporalEnsembler` (Algorithm 2 of the ACT paper; its
default coeff 0.01 weighs older predictions more), computed directly from the last `chunk_size`
chunks instead of LeRobot's running average. LeRobot averages normalised actions inside the
model and un-normalises afterwards; we average post-processed actions: the same numbers, since
un-normalising is affine and the weights sum to one.

It needs a chunk every period (33 ms at 30 FPS): full-size ACT on 2 CPU cores takes about 580 ms.
`measure_latency_s` times the predictor in a warm-up and `ensembling_fallback_notice` says when
the machine cannot keep up; the factory then builds the async engine instead and shows the notice.
"""

import statistics
import time
from collections import deque

import numpy as np

from policies.engine import ChunkPredictor, EngineAction, EngineStats, PolicyInput
from policies.engines.chunk_queue import validate_chunk
from policies.engines.latency import LatencyLog
from policies.engines.predict import call_predictor


class TemporalEnsembler:
    """Weighted mean of every chunk's prediction for the current tick. One thread."""

    def __init__(self, coeff: float, chunk_size: int) -> None:
        self.chunk_size = chunk_size
        self.weights = np.exp(-coeff * np.arange(chunk_size, dtype=np.float64))  # oldest prediction first
        self._chunks: deque[np.ndarray] = deque(maxlen=chunk_size)  # chunks still covering the current tick

    def update(self, chunk: np.ndarray) -> np.ndarray:
        """Add this tick's chunk (chunk_size, d); return this tick's ensembled action, float32 (d,)."""
        if len(chunk) != self.chunk_size:
            raise ValueError(f"chunk of {len(chunk)} actions; temporal ensembling was set up for {self.chunk_size}")
        self._chunks.append(np.asarray(chunk, dtype=np.float64))
        count = len(self._chunks)
        # The i-th oldest chunk was computed count - 1 - i ticks ago: its prediction for now is that index.
        predictions = np.stack([c[count - 1 - i] for i, c in enumerate(self._chunks)])
        weights = self.weights[:count, None]
        return ((weights * predictions).sum(axis=0) / weights.sum()).astype(np.float32)

    def reset(self) -> None:
        """Forget every chunk (a new episode)."""
        self._chunks.clear()


class EnsembleEngine:
    """A chunk per tick on the control thread, temporally ensembled. Used by the control thread only."""

    def __init__(self, predictor: ChunkPredictor, *, coeff: float = 0.01) -> None:
        self.predictor = predictor
        self.ensembler = TemporalEnsembler(coeff, predictor.chunk_size)
        self.latencies = LatencyLog()
        self._chunks = 0
        self._blocked_s = 0.0

    def start(self) -> None:
        """Nothing runs in the background."""

    def next_action(self, inputs: PolicyInput, tick_index: int) -> EngineAction:
        """Compute this tick's chunk (blocking) and return the ensembled action."""
        chunk_id = self._chunks
        chunk, latency_s = call_predictor(self.predictor, inputs, chunk_id)
        self._blocked_s += latency_s
        chunk = validate_chunk(chunk, chunk_id)
        self._chunks += 1
        self.latencies.add(latency_s)
        values = self.ensembler.update(chunk)
        return EngineAction(values, chunk_id, 0, latency_s, self.ensembler.chunk_size - 1)

    def reset(self) -> None:
        """Forget the ensemble and the predictor's state (between episodes)."""
        self.ensembler.reset()
        self.predictor.reset()

    def stats(self) -> EngineStats:
        """Counters so far; `blocked_s` is the time the loop spent computing chunks."""
        return EngineStats(
            chunks=self._chunks,
            starved_ticks=0,
            latency_p50_s=self.latencies.percentile_s(50),
            latency_p95_s=self.latencies.percentile_s(95),
            queue_depth=0,
            blocked_s=self._blocked_s,
        )

    def close(self) -> None:
        """Nothing to release."""


def measure_latency_s(predictor: ChunkPredictor, inputs: PolicyInput, calls: int = 3) -> float:
    """The predictor's chunk latency: the median of `calls` timed calls after one untimed warm-up call.

    Blocks for (calls + 1) chunk latencies; resets the predictor afterwards.
    """
    call_predictor(predictor, inputs, -1)
    timings = []
    for _ in range(max(1, calls)):
        start = time.monotonic()
        call_predictor(predictor, inputs, -1)
        timings.append(time.monotonic() - start)
    predictor.reset()
    return statistics.median(timings)


def ensembling_fallback_notice(latency_s: float, fps: float, budget: float = 0.8) -> str | None:
    """None when a chunk fits in `budget` of a period; otherwise what to tell the user, with the numbers."""
    period_s = 1.0 / fps
    if latency_s <= budget * period_s:
        return None
    return (
        f"temporal ensembling needs a chunk every {period_s * 1000:.0f} ms; "
        f"this machine takes {latency_s * 1000:.0f} ms: using async chunking"
    )
