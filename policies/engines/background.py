"""Engines whose chunks are computed on a worker thread while the queued actions execute.

    control thread: next_action(inputs, tick)             worker thread
    ─────────────────────────────────────────             ─────────────────────────────────────
    1. a finished chunk in the result slot? take it   <── result slot <── predictor.predict_chunk(...)
       (non-blocking) and merge it into the queue                                   ^
       (async: cross-fade the overlap; RTC: replace)                                 │
    2. pop this tick's action (None: starved, counted)                               │
    3. depth <= refill threshold and nothing in flight? ──> request slot ────────────┘
       submit (inputs, actions consumed so far)

A tick with nothing queued is starved (counted), except before the episode's first action: those
are warm-up ticks (`warmup_ticks`; `prime` avoids them by computing the first chunk before the loop).
`next_action` never waits: the slots are taken with a non-blocking lock, so a tick that finds the
worker storing a result takes it on the next tick instead. Every predictor call runs on the worker
thread (`prime` too: it waits for the worker, before the loop starts). The refill threshold, in
actions, is fixed or derived from the recent worst chunk latency:

    threshold = ceil(latency_estimate_s * latency_margin * fps), clamped to 1..n_action_steps - 1

so that the queue still holds actions for the whole time the next chunk takes, at most
n_action_steps - 1 (a request with a full queue would arrive with every action in the past). A
latency longer than a chunk cannot be hidden: the threshold is then 0, each chunk runs to its end
and the arms hold while the next one is computed. That moves the arms for n / (n + latency ticks)
of the time; any earlier request moves them less, since the actions executed while it is computed
are skipped from the new chunk (they are in the past) and only n - threshold of it remain.
"""

import logging
import math
import threading
import time
from dataclasses import dataclass

import numpy as np

from policies.engine import ChunkPredictor, EngineAction, EngineStats, PolicyInput
from policies.engines.chunk_queue import ChunkQueue, validate_chunk
from policies.engines.latency import LatencyLog
from policies.engines.predict import call_predictor
from policies.errors import InferenceError, PolicyError
from robot.realtime import ordinary_thread

logger = logging.getLogger(__name__)
JOIN_TIMEOUT_S = 10.0  # close() waits this long for a chunk in progress, seconds


@dataclass(frozen=True)
class ChunkRequest:
    """What the worker is asked to compute."""

    chunk_id: int  # the id the chunk will carry
    inputs: PolicyInput  # the observation it is computed from
    tick_index: int  # the tick that observation belongs to (-1 for prime)
    consumed_at_request: int  # actions executed before the observation (alignment, see chunk_queue)
    inference_delay: int  # ticks the chunk's start is expected to be late by (RTC)
    leftover: np.ndarray | None  # the queued actions not yet executed (RTC), float32 (r, 12)


@dataclass(frozen=True)
class ChunkResult:
    """What the worker produced for one request."""

    request: ChunkRequest
    chunk: np.ndarray | None  # (n, 12), None on error
    latency_s: float  # predictor call time, seconds
    error: Exception | None


class BackgroundEngine:
    """The shared machinery of the async and RTC engines. `next_action` is for one (control) thread."""

    name = "background"

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
        self.predictor = predictor
        self.fps = fps
        self.n_action_steps = min(n_action_steps or predictor.chunk_size, predictor.chunk_size)
        self.fixed_threshold = refill_threshold
        self.latency_margin = latency_margin
        self.queue = ChunkQueue()
        self.latencies = LatencyLog(expected_s=expected_latency_s)
        self.lock_misses = 0  # ticks that found the worker holding the slots (the result waited a tick)
        self.warmup_ticks = 0  # ticks before the episode's first action (not starved: nothing ran dry yet)
        self._served = False  # whether an action was served since the last reset
        self._chunks = 0
        self._next_id = 0
        self._starved = 0
        self._awaiting: int | None = None  # chunk id in flight that the queue waits for
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._ready = threading.Event()  # set by the worker after each result (prime waits on it)
        self._request: ChunkRequest | None = None
        self._result: ChunkResult | None = None
        self._reset_pending = False
        self._stopping = False
        self._thread: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Start the worker thread (idempotent)."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stopping = False
        self._thread = threading.Thread(target=self._work, name=f"{self.name}-inference", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the worker (waits up to JOIN_TIMEOUT_S for a chunk in progress)."""
        with self._wake:
            self._stopping = True
            self._request = None
            self._wake.notify_all()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(JOIN_TIMEOUT_S)
            if thread.is_alive():
                logger.warning("the %s inference thread is still computing a chunk; leaving it behind", self.name)

    def reset(self) -> None:
        """Drop queued actions and any chunk in flight; the predictor is reset before its next chunk."""
        self.queue.clear()
        self._awaiting = None
        self._served = False
        with self._wake:
            self._request = None
            self._result = None
            self._reset_pending = True
            if self._thread is None:
                self._reset_pending = False
                self._reset_predictor()

    def prime(self, inputs: PolicyInput, timeout_s: float | None = None) -> None:
        """Compute the first chunk now and queue it (blocking; call before the loop starts).

        Its latency also seeds the refill threshold, so the first refill is asked for in time.
        """
        self.start()
        if len(self.queue) > 0:
            return
        if self._awaiting is None:
            self._submit(inputs, -1, self.queue.consumed, blocking=True)
        if not self.wait_for_chunk(timeout_s):
            raise InferenceError(
                f"the first chunk took longer than {timeout_s} s; the policy is too slow for this machine "
                "(try a GPU, or the remote engine)"
            )
        self._collect(blocking=True)

    # --- the control thread ----------------------------------------------------------------

    def next_action(self, inputs: PolicyInput, tick_index: int) -> EngineAction | None:
        """This tick's action, or None when nothing is queued (never waits for the worker)."""
        self.start()
        self._collect(blocking=False)
        consumed_before = self.queue.consumed  # the observation is for this tick: its action 0 is this tick's
        item = self.queue.pop()
        if self._awaiting is None and len(self.queue) <= self.refill_threshold():
            self._submit(inputs, tick_index, consumed_before)
        if item is None:
            if self._served:
                self._starved += 1
            else:
                self.warmup_ticks += 1
            return None
        self._served = True
        return EngineAction(item.values, item.chunk_id, item.index_in_chunk, item.chunk_latency_s, len(self.queue))

    def wait_for_chunk(self, timeout_s: float | None = None) -> bool:
        """Block until the chunk in flight is computed (prime, tests, tools; never the control loop).

        Returns False on timeout; True at once when nothing is in flight.
        """
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while self._awaiting is not None:
            with self._lock:
                result = self._result
            if result is not None and result.request.chunk_id == self._awaiting:
                return True
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            self._ready.wait(remaining)
            self._ready.clear()
        return True

    def refill_threshold(self) -> int:
        """Request the next chunk when this many actions (or fewer) remain queued."""
        if self.fixed_threshold is not None:
            return self.fixed_threshold
        estimate = self.latencies.estimate_s()
        if estimate is None:
            return max(1, self.n_action_steps // 2)  # LeRobot's async client default (0.5 of a chunk)
        latency_ticks = estimate * self.fps
        if latency_ticks >= self.n_action_steps:
            return 0  # cannot be hidden: run each chunk to its end (an earlier request would arrive all in the past)
        return max(1, min(self.n_action_steps - 1, math.ceil(latency_ticks * self.latency_margin)))

    def stats(self) -> EngineStats:
        """Counters so far; `blocked_s` is 0: the loop never waits on the worker."""
        return EngineStats(
            chunks=self._chunks,
            starved_ticks=self._starved,
            latency_p50_s=self.latencies.percentile_s(50),
            latency_p95_s=self.latencies.percentile_s(95),
            queue_depth=len(self.queue),
            blocked_s=0.0,
        )

    def _submit(self, inputs: PolicyInput, tick_index: int, consumed: int, *, blocking: bool = False) -> int | None:
        if not self._lock.acquire(blocking=blocking):
            self.lock_misses += 1
            return None
        try:
            delay, leftover = self._request_extras()
            request = ChunkRequest(self._next_id, inputs, tick_index, consumed, delay, leftover)
            self._request = request
            self._awaiting = request.chunk_id
            self._next_id += 1
            self._wake.notify()
        finally:
            self._lock.release()
        return request.chunk_id

    def _collect(self, *, blocking: bool) -> None:
        if self._awaiting is None:
            return
        if not self._lock.acquire(blocking=blocking):
            self.lock_misses += 1
            return
        try:
            result, self._result = self._result, None
        finally:
            self._lock.release()
        if result is None or result.request.chunk_id != self._awaiting:
            return  # nothing yet, or a chunk asked for before a reset
        self._awaiting = None
        if result.error is not None:
            raise result.error
        request = result.request
        chunk = validate_chunk(result.chunk, request.chunk_id)[: self.n_action_steps]
        self._chunks += 1
        self.latencies.add(result.latency_s)
        self._merge(chunk, request, result.latency_s, skip=self.queue.consumed - request.consumed_at_request)

    # --- what async and RTC do differently -------------------------------------------------

    def _request_extras(self) -> tuple[int, np.ndarray | None]:
        """(inference_delay, leftover) to pass to the predictor; plain async passes neither."""
        return 0, None

    def _merge(self, chunk: np.ndarray, request: ChunkRequest, latency_s: float, skip: int) -> None:
        raise NotImplementedError

    # --- the worker thread -----------------------------------------------------------------

    def _work(self) -> None:
        ordinary_thread()  # started from the loop's thread, which may be real-time
        while True:
            with self._wake:
                while self._request is None and not self._stopping:
                    self._wake.wait()
                if self._stopping:
                    return
                request, self._request = self._request, None
                reset, self._reset_pending = self._reset_pending, False
            result = self._compute(request, reset)
            with self._lock:
                self._result = result
            self._ready.set()

    def _compute(self, request: ChunkRequest, reset: bool) -> ChunkResult:
        try:
            if reset:
                self._reset_predictor()
            chunk, latency_s = call_predictor(
                self.predictor,
                request.inputs,
                request.chunk_id,
                inference_delay=request.inference_delay,
                leftover=request.leftover,
            )
            return ChunkResult(request, chunk, latency_s, None)
        except Exception as e:  # handed to the control thread, which raises it
            return ChunkResult(request, None, math.nan, e)

    def _reset_predictor(self) -> None:
        try:
            self.predictor.reset()
        except PolicyError:
            raise
        except Exception as e:
            raise InferenceError(f"resetting the policy between episodes failed: {type(e).__name__}: {e}") from e
