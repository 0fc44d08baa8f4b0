"""Real-time chunking (RTC) for SmolVLA through LeRobot's implementation, on our queue and hold semantics.

    control thread                                    worker thread
    queue depth <= threshold ──request──────────────> predictor.predict_chunk(inputs,
      inference_delay = ceil(max recent latency * fps)         inference_delay=d,
      leftover = the queued actions not yet executed           leftover=queued actions)
                                                        └─ SmolVLA with `rtc_config.enabled`: LeRobot's
    chunk arrives: skip the actions executed meanwhile,    RTCProcessor guides the flow-matching
    replace the queue with the rest (no cross-fade: the    denoiser towards the leftover prefix
    model already continued the leftover)

What lerobot-rollout's `RTCInferenceEngine` does, with these differences: observations come from
our control loop (no robot wrapper), the skip is the number of actions executed while the chunk
was computed (equal to LeRobot's `ceil(latency * fps)` when no tick starved), an empty queue
passes no leftover (LeRobot pads an empty one with zeros), and an empty queue is a starved tick the
source holds, counted. The delay uses LeRobot's `LatencyTracker` (the maximum of recent chunks).
The leftover is in the rig's units; the predictor normalises it (and pads it to the model's
execution horizon) as LeRobot does before `predict_action_chunk(..., prev_chunk_left_over=...)`.
"""

import math

import numpy as np

from policies.engine import ChunkPredictor
from policies.engines.background import BackgroundEngine, ChunkRequest
from policies.engines.blend import BlendMode
from policies.lerobot_policy import latency_tracker


class RTCEngine(BackgroundEngine):
    """Background chunking that hands the model its inference delay and the leftover actions."""

    name = "rtc"

    def __init__(
        self,
        predictor: ChunkPredictor,
        *,
        fps: float,
        n_action_steps: int | None = None,
        refill_threshold: int | None = None,
        latency_margin: float = 1.5,
        expected_latency_s: float | None = None,
    ) -> None:
        super().__init__(
            predictor,
            fps=fps,
            n_action_steps=n_action_steps,
            refill_threshold=refill_threshold,
            latency_margin=latency_margin,
            expected_latency_s=expected_latency_s,
        )
        self.tracker = latency_tracker()
        self.delays: list[int] = []  # inference_delay passed with each request, in order

    def _request_extras(self) -> tuple[int, np.ndarray | None]:
        latency = self.tracker.max() or self.latencies.expected_s
        delay = math.ceil(latency * self.fps) if latency else 0
        self.delays.append(delay)
        leftover = self.queue.remaining()
        return delay, (leftover if len(leftover) else None)

    def _merge(self, chunk: np.ndarray, request: ChunkRequest, latency_s: float, skip: int) -> None:
        self.tracker.add(latency_s)
        self.queue.merge(chunk, chunk_id=request.chunk_id, latency_s=latency_s, skip=skip, blend=BlendMode.REPLACE)
