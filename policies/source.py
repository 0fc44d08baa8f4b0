"""The policy as the control loop's action source: observation in, both arms' goal out, never a jump.

    rig Observation ──inputs()──> PolicyInput(state in BIMANUAL_KEYS order, frames by camera name, task)
                                      │
                                      v
                          engine.next_action(inputs, tick.index)
                           │ EngineAction                    │ None (starved, or the first chunk not in yet)
                           v                                 v
                 finite? else NonFiniteActionError    hold the last commanded goal
                 (the loop ends; nothing is sent)     (at an episode's start: the followers' pose)
                           │                                 │
                           └────────> JointValues <──────────┘        last_facts: chunk id, index,
                                                                      latency, queue depth, starved

A NaN or inf never leaves this class: the engines already refuse a chunk holding one, this is the
last check before the rig (whose safety layer would also refuse it, but a stopped episode is the
honest outcome, not a silently frozen joint). `ControlLoop.run` raises the error; the rig's exit
then leaves the followers safe (held, or moved to rest, per `safety.on_exit`).

The first action after a reset (the policy takes charge) and the first after starved ticks (it
resumes) change the source of the goals: `on_transition` (the rig's `begin_transition`) is called
before they are returned, so the safety layer ramps to them instead of letting the arm chase them.

    source = PolicySource(engine, task="Fold the cloth")
    source.prime(rig.observe())                       # optional: the first chunk before the loop
    ControlLoop(rig, source, hooks=[...]).run(duration_s=30)
    source.last_facts.as_dict()
"""

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass

import numpy as np

from policies.engine import EngineAction, EngineStats, InferenceEngine, PolicyInput
from policies.errors import InferenceError, NonFiniteActionError
from robot.joint_values import JointValues
from robot.joints import BIMANUAL_KEYS
from robot.loop_timer import Tick
from robot.rig import Observation


def policy_input(observation: Observation, task: str) -> PolicyInput:
    """What a policy sees: follower state (BIMANUAL_KEYS order), each camera's synced frame, the task."""
    state = observation.state()
    images = {}
    if observation.frames is not None:
        images = {name: frame.image for name, frame in observation.frames.frames.items()}
    return PolicyInput(
        state=state.vector.astype(np.float32),
        images=images,
        task=task,
        time_s=observation.t_s,
    )


@dataclass(frozen=True)
class TickFacts:
    """What inference did for one tick (stored beside the evaluation dataset, never fed to training)."""

    chunk_id: int  # chunk the action came from; -1 on a starved tick
    index_in_chunk: int  # its position in that chunk; -1 on a starved tick
    chunk_latency_s: float  # how long that chunk took, seconds; NaN on a starved tick
    queue_depth: int  # actions still queued after this tick
    starved: bool  # no action was ready: the last commanded goal was held

    def as_dict(self) -> dict[str, float]:
        """Plain floats (booleans as 0/1), for the recorder's per-frame facts."""
        return {key: float(value) for key, value in asdict(self).items()}


class PolicySource:
    """An `ActionSource` (and rollout `PolicyDriver`) over an inference engine. One thread (the loop's)."""

    def __init__(
        self,
        engine: InferenceEngine,
        *,
        task: str = "Fold the cloth",
        on_transition: Callable[[str], None] = lambda reason: None,
    ) -> None:
        """`on_transition(reason)`: the policy takes charge or resumes (pass the rig's `begin_transition`)."""
        self.engine = engine
        self.task = task
        self.on_transition = on_transition
        self.last_facts: TickFacts | None = None
        self._last_goal: np.ndarray | None = None
        self._acted = False
        self._starved_ticks = 0  # starved ticks since the last action
        self._started = False

    def inputs(self, observation: Observation) -> PolicyInput:
        """What the policy sees of `observation` (see `policy_input`), with this source's task."""
        return policy_input(observation, self.task)

    def prime(self, observation: Observation) -> None:
        """Let the engine compute its first chunk now, before the loop starts (blocks; no-op if unsupported)."""
        self._start()
        prime = getattr(self.engine, "prime", None)
        if callable(prime):
            prime(self.inputs(observation))

    def action(self, observation: Observation, tick: Tick) -> JointValues:
        """The policy's goal for this tick, or the held goal when none is ready.

        Raises:
            NonFiniteActionError: the action holds a NaN or inf (nothing is returned, nothing is sent).
        """
        self._start()
        inputs = self.inputs(observation)
        action = self.engine.next_action(inputs, tick.index)
        if action is None:
            if self._last_goal is None:
                self._last_goal = inputs.state.copy()  # the start of an episode: hold where the arms are
            depth = self.engine.stats().queue_depth
            self.last_facts = TickFacts(-1, -1, math.nan, depth, starved=True)
            self._starved_ticks += 1
            return JointValues.from_vector(self._last_goal)
        values = _checked(action)
        if not self._acted:
            self.on_transition("the policy takes charge")
        elif self._starved_ticks:
            self.on_transition(f"the policy resumes after {self._starved_ticks} starved tick(s)")
        self._starved_ticks = 0
        self._last_goal = values
        self._acted = True
        self.last_facts = TickFacts(
            action.chunk_id, action.index_in_chunk, action.chunk_latency_s, action.queue_depth, starved=False
        )
        return JointValues.from_vector(values)

    def reset(self) -> None:
        """A new episode: the engine drops its queue, and a starved first tick holds the arms' new pose."""
        self.engine.reset()
        self._last_goal = None
        self._acted = False
        self._starved_ticks = 0
        self.last_facts = None

    @property
    def has_acted(self) -> bool:
        """Whether the policy produced an action since the last reset."""
        return self._acted

    def facts(self) -> Mapping[str, float]:
        """The last tick's inference facts as floats (empty before the first tick)."""
        return self.last_facts.as_dict() if self.last_facts is not None else {}

    def stats(self) -> EngineStats:
        """The engine's counters (for the status line)."""
        return self.engine.stats()

    def status_text(self) -> str:
        """Latency p50/p95, queue depth and starved ticks, for the status line and the summary."""
        stats = self.stats()

        def ms(value: float | None) -> str:
            return "–" if value is None else f"{value * 1000:.0f}"

        return (
            f"inference p50/p95 {ms(stats.latency_p50_s)}/{ms(stats.latency_p95_s)} ms"
            f"  queue {stats.queue_depth}  starved {stats.starved_ticks}"
        )

    def close(self) -> None:
        """Stop the engine's background work."""
        self.engine.close()

    def _start(self) -> None:
        if not self._started:
            self.engine.start()
            self._started = True


def _checked(action: EngineAction) -> np.ndarray:
    values = np.asarray(action.values, dtype=np.float32)
    if values.shape != (len(BIMANUAL_KEYS),):
        raise InferenceError(
            f"chunk {action.chunk_id} action {action.index_in_chunk} has shape {values.shape}, not "
            f"({len(BIMANUAL_KEYS)},): nothing was sent and the episode stops"
        )
    bad = [key for key, value in zip(BIMANUAL_KEYS, values, strict=True) if not math.isfinite(float(value))]
    if bad:
        raise NonFiniteActionError(
            f"chunk {action.chunk_id} action {action.index_in_chunk} is not finite on {', '.join(bad)}: "
            "nothing was sent and the episode stops. Check the checkpoint (its normalisation stats, its training)."
        )
    return values
