"""A `ChunkPredictor` test double: known chunks, an injected latency, optional NaN, a log of every call.

    predictor = ScriptedPredictor(chunk_size=50, latency_s=0.5)          # counting chunks
    predictor = ScriptedPredictor(chunk_size=50, pattern=wave(8.0))      # gentle motion around the start pose
    predictor = ScriptedPredictor(chunk_size=10, nan_at_call=3)          # the 4th chunk holds a NaN
    chunk = predictor.predict_chunk(inputs)   # sleeps latency_s, returns float32 (chunk_size, 12)
    predictor.calls[-1].thread_name, predictor.calls[-1].leftover

Patterns are functions of the call index and the inputs, so engines can be checked without torch:
`counting` makes action i of chunk c equal to 1000 c + i + j / 100 on joint j (every value tells
which chunk and index it came from); `wave` moves every joint along a slow sine around the pose the
arms had at the first call, as a function of time, so it is safe to send to the virtual rig.
"""

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from policies.engine import PolicyInput
from robot.joints import BIMANUAL_KEYS

Pattern = Callable[[int, PolicyInput, int], np.ndarray]  # (call index, inputs, chunk size) -> (chunk size, 12)
ACTION_SIZE = len(BIMANUAL_KEYS)


def counting(call: int, inputs: PolicyInput, chunk_size: int) -> np.ndarray:
    """Action i of chunk `call` on joint j: 1000 * call + i + j / 100."""
    index = np.arange(chunk_size, dtype=np.float64)[:, None]
    joint = np.arange(ACTION_SIZE, dtype=np.float64)[None, :] / 100.0
    return (1000.0 * call + index + joint).astype(np.float32)


def wave(amplitude_deg: float = 5.0, period_s: float = 4.0, fps: float = 30.0) -> Pattern:
    """Every joint follows start + amplitude * sin(2π t / period), t from the first call's observation.

    Action i of a chunk is the pose for time `inputs.time_s + i / fps`, so successive chunks agree
    on the ticks they share, as a well-trained policy's would.
    """
    origin: dict[str, object] = {}

    def pattern(call: int, inputs: PolicyInput, chunk_size: int) -> np.ndarray:
        if "state" not in origin:
            origin["state"] = np.asarray(inputs.state, dtype=np.float64).copy()
            origin["t"] = inputs.time_s
        start = origin["state"]
        t = inputs.time_s - float(origin["t"]) + np.arange(chunk_size) / fps  # type: ignore[arg-type]
        offsets = amplitude_deg * np.sin(2 * math.pi * t / period_s)[:, None]
        return (start[None, :] + offsets).astype(np.float32)  # type: ignore[index]

    return pattern


@dataclass(frozen=True)
class ScriptedCall:
    """One `predict_chunk` call, as the predictor saw it."""

    index: int  # 0, 1, ... in call order
    time_s: float  # the inputs' observation time
    inference_delay: int
    leftover: np.ndarray | None  # a copy of what the engine passed
    thread_name: str  # the thread the call ran on
    started_s: float  # monotonic time the call started
    finished_s: float


class ScriptedPredictor:
    """Deterministic chunks after an injected latency. Thread-safe enough for one engine's worker."""

    def __init__(
        self,
        chunk_size: int = 50,
        *,
        latency_s: float = 0.0,
        pattern: Pattern = counting,
        nan_at_call: int | None = None,
        nan_index: int = 0,
        fail_at_call: int | None = None,
    ) -> None:
        """Make the double.

        Args:
            chunk_size: actions per chunk.
            latency_s: how long each call sleeps before returning, seconds.
            pattern: the chunk as a function of (call index, inputs, chunk size).
            nan_at_call: this call's chunk gets a NaN at action `nan_index`, joint 0 (None: never).
            nan_index: where in that chunk the NaN goes.
            fail_at_call: this call raises RuntimeError (None: never).
        """
        self.chunk_size = chunk_size
        self.latency_s = latency_s
        self.pattern = pattern
        self.nan_at_call = nan_at_call
        self.nan_index = nan_index
        self.fail_at_call = fail_at_call
        self.calls: list[ScriptedCall] = []
        self.resets = 0
        self._next_index = 0
        self._lock = threading.Lock()

    def predict_chunk(
        self, inputs: PolicyInput, *, inference_delay: int = 0, leftover: np.ndarray | None = None
    ) -> np.ndarray:
        """The scripted chunk, float32 (chunk_size, 12), after sleeping `latency_s`."""
        started = time.monotonic()
        with self._lock:
            index = self._next_index
            self._next_index += 1
        if self.latency_s > 0:
            time.sleep(self.latency_s)
        if self.fail_at_call == index:
            raise RuntimeError(f"scripted failure at call {index}")
        chunk = np.array(self.pattern(index, inputs, self.chunk_size), dtype=np.float32)
        if self.nan_at_call == index:
            chunk[self.nan_index, 0] = np.nan
        call = ScriptedCall(
            index=index,
            time_s=inputs.time_s,
            inference_delay=inference_delay,
            leftover=None if leftover is None else np.array(leftover, copy=True),
            thread_name=threading.current_thread().name,
            started_s=started,
            finished_s=time.monotonic(),
        )
        with self._lock:
            self.calls.append(call)
        return chunk

    def reset(self) -> None:
        """Count the reset (the chunks do not depend on it)."""
        self.resets += 1
