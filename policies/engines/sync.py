"""The synchronous baseline: a chunk is computed on the control thread when the queue is empty.

    next_action(inputs) ── queue empty? ──yes──> predictor.predict_chunk(inputs)  (the loop waits: blocked_s)
                                   │                     └── chunk[:n_action_steps] appended to the queue
                                   └────────────────────────> pop the next action

This is what LeRobot's `select_action` does for ACT and SmolVLA (`n_action_steps` actions of each
chunk, one per call, in order), and what `lerobot-rollout --inference.type=sync` runs. It is the
point of comparison: with a 0.6 s chunk the loop stops for 18 ticks at every chunk boundary.
"""

import time

from policies.engine import ChunkPredictor, EngineAction, EngineStats, PolicyInput
from policies.engines.chunk_queue import ChunkQueue, validate_chunk
from policies.engines.latency import LatencyLog
from policies.engines.predict import call_predictor


class SyncEngine:
    """Computes chunks inline, like LeRobot's select_action. Used by the control thread only."""

    def __init__(self, predictor: ChunkPredictor, *, n_action_steps: int | None = None) -> None:
        self.predictor = predictor
        self.n_action_steps = n_action_steps or predictor.chunk_size
        self.queue = ChunkQueue()
        self.latencies = LatencyLog()
        self._chunks = 0
        self._starved = 0
        self._blocked_s = 0.0

    def start(self) -> None:
        """Nothing runs in the background."""

    def prime(self, inputs: PolicyInput) -> None:
        """Compute the first chunk now (before the loop starts), so the first tick does not wait."""
        if len(self.queue) == 0:
            self._compute(inputs)

    def next_action(self, inputs: PolicyInput, tick_index: int) -> EngineAction | None:
        """The next queued action; when none is left, compute a chunk first (blocking)."""
        if len(self.queue) == 0:
            start = time.monotonic()
            self._compute(inputs)
            self._blocked_s += time.monotonic() - start
        item = self.queue.pop()
        if item is None:  # unreachable with a valid chunk; kept so a starved tick is never silent
            self._starved += 1
            return None
        return EngineAction(item.values, item.chunk_id, item.index_in_chunk, item.chunk_latency_s, len(self.queue))

    def _compute(self, inputs: PolicyInput) -> None:
        chunk_id = self._chunks
        chunk, latency_s = call_predictor(self.predictor, inputs, chunk_id)
        chunk = validate_chunk(chunk, chunk_id)[: self.n_action_steps]
        self._chunks += 1
        self.latencies.add(latency_s)
        self.queue.extend(chunk, chunk_id=chunk_id, latency_s=latency_s)

    def reset(self) -> None:
        """Drop queued actions and the predictor's state (between episodes)."""
        self.queue.clear()
        self.predictor.reset()

    def stats(self) -> EngineStats:
        """Counters so far; `blocked_s` is the time the loop waited for chunks."""
        return EngineStats(
            chunks=self._chunks,
            starved_ticks=self._starved,
            latency_p50_s=self.latencies.percentile_s(50),
            latency_p95_s=self.latencies.percentile_s(95),
            queue_depth=len(self.queue),
            blocked_s=self._blocked_s,
        )

    def close(self) -> None:
        """Nothing to release."""
