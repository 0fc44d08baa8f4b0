"""Action sources of a replay: recorded actions, a policy fed recorded observations, an ease-in.

    RecordedActionSource   frame k's recorded action at tick k (held joints stay where they were)
    PolicyReplaySource     recorded state + decoded frames of frame k -> InferenceEngine -> action
                           (open loop: the policy never sees what the rig did; a starved tick holds)
    EaseInSource           the episode's first action, held while the rig's transition ramp
                           brings the followers there from wherever they are, then done

Each calls `on_done` when it has returned its last action, so the control loop stops after that
tick. Targets come as float64 (n, 12) arrays in BIMANUAL_KEYS order with NaN for joints the
dataset does not drive: those hold the position the episode found them in.
"""

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from policies.engine import InferenceEngine, PolicyInput
from robot.control_loop import Tick
from robot.joint_values import JointValues
from robot.joints import BIMANUAL_KEYS
from robot.rig import Observation

Done = Callable[[], None]


def _goal(row: np.ndarray, hold: JointValues) -> JointValues:
    """The goal of one target row; NaN (a joint the dataset does not drive) holds."""
    return JointValues.from_vector(row).fill_missing(hold)


class RecordedActionSource:
    """The recorded actions of one episode, one per tick."""

    def __init__(self, actions: np.ndarray, on_done: Done) -> None:
        if len(actions) == 0:
            raise ValueError("an episode with no frames cannot be replayed")
        self.actions = actions
        self.on_done = on_done
        self.frame = -1  # the frame of the last action returned
        self.hold: JointValues | None = None

    def action(self, observation: Observation, tick: Tick) -> JointValues:
        """Frame k's action at the k-th tick."""
        if self.hold is None:
            self.hold = observation.state()
        self.frame += 1
        if self.frame == len(self.actions) - 1:
            self.on_done()
        return _goal(self.actions[self.frame], self.hold)


@dataclass(frozen=True)
class PolicyFacts:
    """What the engine did at one tick."""

    frame: int  # the recorded frame whose observation the policy saw
    starved: bool  # no action was ready: the source held the last goal
    chunk_id: int | None  # the chunk the action came from
    index_in_chunk: int | None  # its position in that chunk
    chunk_latency_s: float | None  # how long that chunk took to compute, s
    queue_depth: int | None  # actions still queued
    call_s: float  # how long `next_action` took on the control thread, s


class PolicyReplaySource:
    """A policy fed an episode's recorded observations through an inference engine (open loop)."""

    def __init__(
        self,
        engine: InferenceEngine,
        states: np.ndarray,
        images: Callable[[int], Mapping[str, np.ndarray]],
        task: str,
        on_done: Done,
        *,
        dataset_fps: float,
        driven: np.ndarray | None = None,
    ) -> None:
        """A policy source.

        Args:
            engine: the real inference engine (started by the caller).
            states: float64 (n, 12) recorded follower state, NaN for joints the dataset lacks.
            images: frame index -> {camera name: uint8 (h, w, 3) RGB}, asked in order 0, 1, ...
            task: the task text the policy is given.
            on_done: called after the last frame's action.
            dataset_fps: the recording's rate: `PolicyInput.time_s` is frame / dataset_fps, the
                observation's time on the dataset's clock (from the episode's start).
            driven: bool (12,) joints the policy may move (default all); the others hold.
        """
        if len(states) == 0:
            raise ValueError("an episode with no frames cannot be replayed")
        self.engine = engine
        self.states = states
        self.images = images
        self.task = task
        self.on_done = on_done
        self.dataset_fps = dataset_fps
        self.driven = np.ones(len(BIMANUAL_KEYS), bool) if driven is None else driven
        self.frame = -1
        self.hold: JointValues | None = None
        self.last_goal: JointValues | None = None
        self.facts: PolicyFacts | None = None
        self._first_images: Mapping[str, np.ndarray] | None = None

    def _inputs(self, k: int) -> PolicyInput:
        recorded = JointValues.from_vector(self.states[k])
        state = (recorded if self.hold is None else recorded.fill_missing(self.hold)).vector.astype(np.float32)
        if k == 0 and self._first_images is not None:
            images = self._first_images
        else:
            images = self.images(k)
            self._first_images = images if k == 0 else None
        return PolicyInput(state=state, images=images, task=self.task, time_s=k / self.dataset_fps)

    def prime(self, observation: Observation) -> None:
        """Have the engine compute its first chunk now, before the loop (engines that can)."""
        self.hold = observation.state()
        self.last_goal = self.hold
        prime = getattr(self.engine, "prime", None)
        if prime is not None:
            prime(self._inputs(0))

    def action(self, observation: Observation, tick: Tick) -> JointValues:
        """The engine's action for the recorded frame of this tick, or the last goal when none is ready."""
        if self.hold is None:
            self.hold = observation.state()
            self.last_goal = self.hold
        self.frame += 1
        k = self.frame
        inputs = self._inputs(k)
        start = time.perf_counter()
        result = self.engine.next_action(inputs, k)
        call_s = time.perf_counter() - start
        if k == len(self.states) - 1:
            self.on_done()
        if result is None:
            self.facts = PolicyFacts(k, True, None, None, None, None, call_s)
            return self.last_goal or self.hold
        row = np.where(self.driven, np.asarray(result.values, dtype=np.float64), np.nan)
        goal = _goal(row, self.hold)
        self.last_goal = goal
        self.facts = PolicyFacts(
            k, False, result.chunk_id, result.index_in_chunk, result.chunk_latency_s, result.queue_depth, call_s
        )
        return goal


class EaseInSource:
    """Holds a target pose while the rig's transition ramp brings the followers there; done after settling.

    The caller begins the rig's transition (`rig.begin_transition`) before the loop: the safety
    layer then moves each follower at `ramp_speed_deg_s` and ends the transition once the target
    was reached; `settle_s` more lets the joints arrive.
    """

    def __init__(
        self, target: np.ndarray, in_transition: Callable[[], bool], fps: float, on_done: Done, *, settle_s: float = 0.3
    ) -> None:
        self.target = target
        self.in_transition = in_transition
        self.on_done = on_done
        self.settle_ticks = max(1, round(settle_s * fps))
        self.hold: JointValues | None = None
        self.ticks = 0
        self.engaged = False  # the followers were commanded the target pose (the ramp is over)
        self._engaged_ticks = 0

    def action(self, observation: Observation, tick: Tick) -> JointValues:
        """The target pose (joints the dataset does not drive hold where they were)."""
        if self.hold is None:
            self.hold = observation.state()
        # The rig's transition state is that of the last tick's command.
        if self.ticks > 0 and not self.in_transition():
            self.engaged = True
        self.ticks += 1
        if self.engaged:
            self._engaged_ticks += 1
            if self._engaged_ticks >= self.settle_ticks:
                self.on_done()
        return _goal(self.target, self.hold)
