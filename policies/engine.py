"""The seams between a policy and the control loop: what a policy sees, and how actions come out.

    rig Observation ──PolicyInput──> InferenceEngine.next_action(...) ──EngineAction | None──> PolicySource
                                          │  (sync, async, RTC, ensemble, remote)
                                          └── ChunkPredictor.predict_chunk(...) -> (n, 12) post-processed chunk

A `ChunkPredictor` wraps one loaded policy with LeRobot's pre- and post-processors (or a remote
server, or a test double with injected latency). An `InferenceEngine` decides *when* chunks are
computed and which action of which chunk is due at each tick; it never blocks the control loop
except the synchronous baseline, which is the point of comparison. `None` from `next_action` means
no action is ready (a starved tick): the source then holds the last commanded position.

All actions are float32 arrays in `robot.joints.BIMANUAL_KEYS` order, in the rig's units
(degrees for body joints, 0..100 for grippers), i.e. after the policy's post-processor.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np


@dataclass(frozen=True)
class PolicyInput:
    """What a policy sees at one tick."""

    state: np.ndarray  # float32 (12,), BIMANUAL_KEYS order (follower joints)
    images: Mapping[str, np.ndarray]  # rig camera name -> uint8 (h, w, 3) RGB
    task: str  # the task text, e.g. "Fold the cloth"
    time_s: float  # monotonic time the observation is for


@dataclass(frozen=True)
class EngineAction:
    """One action due at a tick, and where it came from."""

    values: np.ndarray  # float32 (12,), BIMANUAL_KEYS order
    chunk_id: int  # which chunk (0, 1, ...) the action belongs to
    index_in_chunk: int  # its position in that chunk
    chunk_latency_s: float  # how long that chunk took to compute
    queue_depth: int  # actions still queued after this one


@dataclass(frozen=True)
class EngineStats:
    """Counters for the status line and the evaluation dataset."""

    chunks: int  # chunks computed so far
    starved_ticks: int  # ticks where no action was ready
    latency_p50_s: float | None  # chunk latency percentiles over the engine's life
    latency_p95_s: float | None
    queue_depth: int  # actions queued now
    blocked_s: float  # total time next_action spent waiting on inference (0 for non-blocking engines)


class ChunkPredictor(Protocol):
    """One policy that turns an observation into a chunk of post-processed actions."""

    chunk_size: int  # actions per chunk

    def predict_chunk(
        self, inputs: PolicyInput, *, inference_delay: int = 0, leftover: np.ndarray | None = None
    ) -> np.ndarray:
        """A float32 (chunk_size, 12) chunk.

        `inference_delay` (ticks the chunk's start will be late by) and `leftover` (the actions of the
        previous chunk not yet executed) are used by real-time chunking; other predictors ignore them.
        """
        ...

    def reset(self) -> None:
        """Forget any internal state (call between episodes)."""
        ...


class InferenceEngine(Protocol):
    """Decides when chunks are computed and which action is due at each tick."""

    def start(self) -> None:
        """Start background work, if any (idempotent)."""
        ...

    def next_action(self, inputs: PolicyInput, tick_index: int) -> EngineAction | None:
        """The action for this tick, or None when nothing is ready (never blocks, except sync)."""
        ...

    def reset(self) -> None:
        """Drop queued actions and pending work (between episodes)."""
        ...

    def stats(self) -> EngineStats:
        """Counters so far."""
        ...

    def close(self) -> None:
        """Stop background work and release resources."""
        ...
