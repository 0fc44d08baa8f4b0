"""The remote engine: LeRobot's async-inference policy server on another machine computes the chunks.

    control thread                          worker thread ("remote-policy")             GPU machine
    next_action(inputs, tick) ─ latest ──>  when queued actions <= refill threshold:
      <── queued action for `tick`, or None   send the observation of `tick` ──────────>  LeRobot
          (starved: the source holds)         wait for its chunk (actions for tick,      policy_server
                                              tick + 1, ...) <─────────────────────────
                                              drop what is past, crossfade the overlap,
                                              replace the queue (remote_queue.py)

On the GPU machine:   so101-policy-server --port=8080    (LeRobot's server, on its loopback only)
On the robot machine: ssh -N -L 8080:127.0.0.1:8080 <gpu-host>, then --remote.host=127.0.0.1
(the server unpickles what it is sent, so it is reached through the tunnel, never an open port).

`next_action` never waits on the network: it takes a lock, pops the action planned for its tick and
returns. Chunks are aligned by tick index: the observation is sent with its tick as LeRobot's
`timestep`, the server numbers the chunk's actions from it, and actions for ticks already past when
the chunk arrives are dropped. One request is in flight at a time; the next is made when the queue
falls to the refill threshold (default: half a chunk, raised to cover 1.5x the measured p95 round
trip once chunks have been measured), so with a round trip shorter than the remaining actions no
tick starves.

`prime(inputs)` (PolicySource calls it before an episode when priming is on) fetches the first chunk
while the loop is not running yet, so the episode starts without held ticks; without it the first
ticks are starved and hold the followers' pose until the first chunk lands.

Start, timeouts, reconnects:
- `start()` blocks: it says Ready and has the server load the policy (`setup_timeout_s`, a download
  included). Nothing answering within `connect_timeout_s` (connection refused: at once) raises a
  RemotePolicyError naming host:port and the command that starts the server.
- Each chunk request may take `request_timeout_s`. A refused connection or a timeout mid-episode is
  retried (every `retry_interval_s`) while the arms hold; after `reconnect_for_s` without a chunk
  the engine gives up and the next `next_action` raises RemotePolicyError (the episode stops safely).
  gRPC reconnects the channel by itself when the server comes back.
- A chunk request answered with no actions (the server failed on the observation, or was restarted
  and lost the policy) triggers one new handshake; a second empty answer in a row is fatal.
- LeRobot's server serves one client: a second client's Ready takes it over.
- Pickle is LeRobot's wire format: run the server on a network you trust (we decode its replies
  with an allow-list, but the server unpickles what it is sent).
"""

import logging
import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from policies.engine import EngineAction, EngineStats, PolicyInput
from policies.engines.blend import BlendMode
from policies.engines.remote_client import NoChunkError, PolicyServerClient, ServerUnreachableError
from policies.engines.remote_queue import TickQueue
from policies.engines.remote_wire import (
    SUPPORTED_POLICY_TYPES,
    decode_chunk,
    observation_bytes,
    policy_setup_bytes,
)
from policies.errors import RemotePolicyError
from robot.cameras.shape import CameraShape
from robot.config_checks import reject_non_finite
from robot.errors import ConfigError
from robot.realtime import ordinary_thread

logger = logging.getLogger(__name__)

# With the default threshold, ask for the next chunk this many round trips ahead (p95 of the last ones).
LATENCY_MARGIN = 1.5
_RECENT_LATENCIES = 20
_JOIN_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class RemoteEngineConfig:
    """Where the policy server is, what it should run, and how patient the robot side is."""

    host: str = "127.0.0.1"  # the policy server's host name or IP address (the GPU machine)
    port: int = 8080  # the policy server's TCP port (LeRobot's default: 8080)
    policy_type: str = "act"  # act | smolvla | diffusion | pi0 | pi05 | ... (what LeRobot's server supports)
    # Checkpoint directory on the SERVER's disk (absolute path). LeRobot's server would also download a
    # hub id and load whatever it holds: fetch it with `hf download` first, so you know what it runs.
    checkpoint: str = ""
    policy_device: str = "cuda"  # where the server runs the policy: cuda | mps | cpu
    actions_per_chunk: int = 50  # actions the server returns per chunk (at most the checkpoint's chunk size)
    refill_threshold: int | None = None  # request the next chunk at this many queued actions or fewer; None: auto
    blend: BlendMode = BlendMode.CROSSFADE  # how a new chunk takes over queued actions for the same ticks
    rename_map: dict[str, str] = field(default_factory=dict)  # observation key renames done on the server
    connect_timeout_s: float = 5.0  # longest wait for the server to answer at all, seconds
    setup_timeout_s: float = 300.0  # longest wait for the server to load the policy (download included), seconds
    request_timeout_s: float = 10.0  # longest wait for one chunk (observation upload, inference, reply), seconds
    reconnect_for_s: float = 10.0  # mid-episode, keep retrying a lost server this long (arms hold), seconds
    retry_interval_s: float = 0.5  # pause between retries of a lost server, seconds

    def __post_init__(self) -> None:
        reject_non_finite(self, "remote")

        def refuse(name: str, allowed: str) -> None:
            raise ConfigError(f"remote.{name}={getattr(self, name)!r}: expected {allowed}")

        if not self.host:
            refuse("host", "the policy server's host name or IP address")
        if not 1 <= self.port <= 65535:
            refuse("port", "a TCP port in 1..65535")
        if self.policy_type not in SUPPORTED_POLICY_TYPES:
            refuse("policy_type", f"one of {', '.join(SUPPORTED_POLICY_TYPES)}")
        if not self.checkpoint.startswith("/"):  # a hub id ("user/name") or a path relative to who knows what
            refuse(
                "checkpoint",
                "the checkpoint directory on the server's machine as an absolute path (a hub id: `hf download` "
                "it on the server's machine first)",
            )
        if not self.policy_device or self.policy_device.split(":")[0] not in ("cuda", "mps", "cpu"):
            refuse("policy_device", "cuda, cuda:<index>, mps or cpu")
        if self.actions_per_chunk < 1:
            refuse("actions_per_chunk", "an int >= 1")
        if self.refill_threshold is not None and not 0 <= self.refill_threshold < self.actions_per_chunk:
            refuse("refill_threshold", f"None (auto) or an int in 0..{self.actions_per_chunk - 1} actions")
        for name in ("connect_timeout_s", "setup_timeout_s", "request_timeout_s", "retry_interval_s"):
            if not getattr(self, name) > 0:
                refuse(name, "seconds > 0")
        if not self.reconnect_for_s >= 0:
            refuse("reconnect_for_s", "seconds >= 0")

    @property
    def address(self) -> str:
        """host:port, as the errors name it."""
        return f"{self.host}:{self.port}"


class RemoteEngine:
    """An InferenceEngine whose chunks come from LeRobot's policy server (see the module docstring)."""

    def __init__(self, config: RemoteEngineConfig, cameras: Sequence[CameraShape], *, fps: float = 30.0) -> None:
        """Make the engine; nothing is contacted before `start()`.

        Args:
            config: the server and the policy it should run.
            cameras: the rig's cameras as (name, height px, width px); the images of every PolicyInput.
            fps: the control rate, ticks per second (turns round trips into actions to keep queued).
        """
        self.config = config
        self.cameras = tuple(cameras)
        self.fps = fps
        self._queue = TickQueue(config.blend)
        self._lock = threading.Lock()
        self._want = threading.Event()
        self._closing = threading.Event()
        self._latest: tuple[PolicyInput, int] | None = None
        self._generation = 0
        self._in_flight = False
        self._failure: RemotePolicyError | None = None
        self._client: PolicyServerClient | None = None
        self._thread: threading.Thread | None = None
        self._refill_at = self._auto_threshold([])
        self._latencies: list[float] = []
        self._recent_latencies: list[float] = []  # for the threshold: without each handshake's first (cold) chunk
        self._cold = True  # the next chunk is the first since the policy was loaded (CUDA/cuDNN warm-up)
        self._chunks = 0
        self._starved = 0
        self._rehandshake_pending = False
        self._setup = b""  # the pickled policy setup, kept to load the policy again after a server restart
        self.reconnect_attempts = 0  # chunk requests retried because the server could not be reached

    # --- InferenceEngine ---------------------------------------------------------------------

    def start(self) -> None:
        """Reach the server and have it load the policy (blocks; idempotent), then start the worker.

        Raises:
            RemotePolicyError: the server cannot be reached, or cannot load the policy.
        """
        if self._thread is not None:
            return
        config = self.config
        setup = policy_setup_bytes(
            policy_type=config.policy_type,
            checkpoint=config.checkpoint,
            cameras=self.cameras,
            actions_per_chunk=config.actions_per_chunk,
            device=config.policy_device,
            rename_map=config.rename_map,
        )
        self._setup = setup
        client = PolicyServerClient(config.host, config.port)
        logger.info(
            "asking the policy server at %s to load %s (%s)", config.address, config.checkpoint, config.policy_type
        )
        try:
            self._handshake(client)
        except RemotePolicyError:
            client.close()
            raise
        self._client = client
        self._closing.clear()
        self._thread = threading.Thread(target=self._work, name="remote-policy", daemon=True)
        self._thread.start()

    def next_action(self, inputs: PolicyInput, tick_index: int) -> EngineAction | None:
        """The action planned for `tick_index`, or None when none is (never waits on the server).

        Raises:
            RemotePolicyError: the engine gave up on the server (the message says why).
        """
        with self._lock:
            if self._failure is not None:
                raise self._failure
            self._latest = (inputs, tick_index)
            planned = self._queue.take(tick_index)
            depth = len(self._queue)
            if not self._in_flight and depth <= self._refill_at:
                self._want.set()
            if planned is None:
                self._starved += 1
                return None
        return EngineAction(planned.values, planned.chunk_id, planned.index_in_chunk, planned.chunk_latency_s, depth)

    def prime(self, inputs: PolicyInput) -> None:
        """Fetch the first chunk now, for ticks 0, 1, ... of the episode about to start (blocks; after start()).

        Raises:
            RemotePolicyError: the server cannot be reached or sends nothing usable.
        """
        with self._lock:
            generation = self._generation
        self._attempt(inputs, 0, generation)

    def reset(self) -> None:
        """Drop planned actions; a chunk still in flight is discarded when it lands."""
        with self._lock:
            self._queue.clear()
            self._generation += 1
            self._latest = None
            self._want.clear()

    def stats(self) -> EngineStats:
        """Chunks received, starved ticks, round-trip percentiles, queue depth."""
        with self._lock:
            latencies = list(self._latencies)
            depth = len(self._queue)
            chunks, starved = self._chunks, self._starved
        p50, p95 = (float(np.percentile(latencies, q)) for q in (50, 95)) if latencies else (None, None)
        return EngineStats(chunks, starved, p50, p95, depth, blocked_s=0.0)

    def close(self) -> None:
        """Stop the worker (a request in flight is cancelled) and close the connection."""
        self._closing.set()
        self._want.set()
        if self._client is not None:
            self._client.close()
        if self._thread is not None:
            self._thread.join(timeout=_JOIN_TIMEOUT_S)
            if self._thread.is_alive():
                logger.warning("the remote-policy worker did not stop within %.0f s", _JOIN_TIMEOUT_S)
        self._thread = None
        self._client = None

    @property
    def refill_threshold(self) -> int:
        """Queued actions at or below which the next chunk is requested (now)."""
        return self._refill_at

    # --- worker --------------------------------------------------------------------------------

    def _work(self) -> None:
        ordinary_thread()  # started from the loop's thread, which may be real-time
        outage_since: float | None = None
        while not self._closing.is_set():
            if not self._want.wait(timeout=0.1) or self._closing.is_set():
                continue
            with self._lock:
                self._want.clear()
                latest, generation = self._latest, self._generation
                if latest is None:
                    continue
                self._in_flight = True
            try:
                self._attempt(*latest, generation)
                outage_since = None
            except ServerUnreachableError as e:
                if self._closing.is_set():
                    break
                now = time.monotonic()
                outage_since = now if outage_since is None else outage_since
                if now - outage_since >= self.config.reconnect_for_s:
                    self._fail(
                        RemotePolicyError(
                            f"lost the policy server at {self.config.address} for {now - outage_since:.1f} s "
                            f"(remote.reconnect_for_s={self.config.reconnect_for_s:g}): {e}"
                        )
                    )
                    break
                self.reconnect_attempts += 1
                logger.warning("policy server unreachable, retrying while the arms hold: %s", e)
                self._closing.wait(self.config.retry_interval_s)
                self._want.set()
            except RemotePolicyError as e:
                if not self._closing.is_set():
                    self._fail(e)
                break
            except Exception as e:  # a bug must stop the episode, not leave the arms holding forever
                logger.exception("the remote-policy worker failed")
                self._fail(RemotePolicyError(f"the remote-policy worker failed: {type(e).__name__}: {e}"))
                break
            finally:
                with self._lock:
                    self._in_flight = False

    def _attempt(self, inputs: PolicyInput, tick_index: int, generation: int) -> None:
        client = self._client
        if client is None:
            raise RemotePolicyError("the remote engine is not started")
        payload = observation_bytes(inputs, self.cameras, tick_index)
        sent_s = time.monotonic()
        try:
            data = client.request_chunk(payload, timeout_s=self.config.request_timeout_s)
        except NoChunkError:
            if self._rehandshake_pending:
                raise
            self._rehandshake_pending = True
            logger.warning("the policy server at %s sent no actions; loading the policy again", self.config.address)
            self._handshake(client)
            self._want.set()
            return
        latency_s = time.monotonic() - sent_s
        self._rehandshake_pending = False
        first_tick, actions = decode_chunk(data)
        with self._lock:
            if not self._cold:
                self._recent_latencies = [*self._recent_latencies[1 - _RECENT_LATENCIES :], latency_s]
            self._cold = False
            if generation != self._generation:
                return  # reset() since the observation was sent: that plan belongs to another episode
            chunk_id = self._chunks
            self._chunks += 1
            self._latencies.append(latency_s)
            self._queue.merge(first_tick, actions, chunk_id, latency_s)
            self._refill_at = self._auto_threshold(self._recent_latencies)

    def _handshake(self, client: PolicyServerClient) -> None:
        client.handshake(
            self._setup, connect_timeout_s=self.config.connect_timeout_s, setup_timeout_s=self.config.setup_timeout_s
        )
        self._cold = True

    def _auto_threshold(self, latencies: Sequence[float]) -> int:
        if self.config.refill_threshold is not None:
            return self.config.refill_threshold
        half = math.ceil(self.config.actions_per_chunk / 2)
        if not latencies:
            return half
        ahead = math.ceil(float(np.percentile(latencies, 95)) * self.fps * LATENCY_MARGIN)
        return max(half, ahead)

    def _fail(self, error: RemotePolicyError) -> None:
        logger.error("remote engine stopped: %s", error)
        with self._lock:
            self._failure = error


def make_remote_engine(config: RemoteEngineConfig, cameras: Sequence[CameraShape], fps: float) -> RemoteEngine:
    """The factory's entry point for `kind: remote` (imported lazily: gRPC and LeRobot load only when used)."""
    return RemoteEngine(config, cameras, fps=fps)
