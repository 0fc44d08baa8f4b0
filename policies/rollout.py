"""Rollout episodes: the policy drives the arms while an episode records; between episodes the arms hold.

    phase      READY / RESET ───────── start due ──────────> RECORDING ──── end, stop, e-stop ───> RESET
    arms       hold the pose          policy warms up         policy acts, every tick recorded      hold
    engine     idle                   first chunk computing    chunks flow                           reset

An episode starts recording only once the policy has produced its first action ("engaged"), so the
first chunk's latency is never recorded as starved ticks of the episode; the time it took is still
in the facts (`inference.first_action_s`). While the policy is not in charge the followers hold the
pose they had when it stopped (never a jump), and the engine is reset so the next episode starts
from a fresh observation. The policy taking charge is a transition of the safety layer (the
driver signals it with its first action); so is its losing charge (`on_transition`).

With a start pose (`StartAt`, so101-deploy's --start_pose=demonstrations) the hold is that pose
instead: the arms are ramped there before the first episode and back between episodes, and the
policy takes charge only once the rig reports them arrived (its transition over).
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from robot.control_loop import Step
from robot.joint_values import JointValues
from robot.loop_timer import Tick
from robot.rig import Observation


class PolicyDriver(Protocol):
    """A policy as an action source that can be restarted and reports per-tick facts."""

    def action(self, observation: Observation, tick: Tick) -> JointValues:
        """The goal for this tick (the policy's, or a hold when it starved)."""
        ...

    def reset(self) -> None:
        """Forget queued actions and state: the next call starts a new episode."""
        ...

    @property
    def has_acted(self) -> bool:
        """Whether the policy produced at least one action since the last reset."""
        ...

    def facts(self) -> Mapping[str, float]:
        """Inference facts of the last tick (chunk id, latency, queue depth, starved)."""
        ...


@dataclass(frozen=True)
class StartAt:
    """The pose every rollout starts from, and whether the arms have reached it."""

    pose: JointValues
    reached: Callable[[], bool]  # the rig's ramp to the pose is over (`not rig.in_transition`)


class RolloutSource:
    """Hands control to the policy while an episode is due or running, holds otherwise."""

    def __init__(
        self,
        driver: PolicyDriver,
        in_charge: Callable[[float], bool],
        on_transition: Callable[[str], None] = lambda reason: None,
        start: StartAt | None = None,
    ) -> None:
        """`in_charge(now_s)`: whether the session is recording or about to start an episode.

        `on_transition(reason)`: the hold takes over from the policy (pass the rig's `begin_transition`).
        `start`: hold there between episodes, and hand over only once it is reached (None: hold in place).
        """
        self.driver = driver
        self.in_charge = in_charge
        self.on_transition = on_transition
        self.start = start
        self._hold: JointValues | None = None
        self._to_start = start is not None  # the hold is the start pose: the policy waits for the arms
        self._was_in_charge = False
        self._warmup_started_s: float | None = None
        self.first_action_s: float | None = None  # how long the last episode waited for its first action

    @property
    def engaged(self) -> bool:
        """Whether the policy is driving (the session may start recording)."""
        return self._was_in_charge and self.driver.has_acted

    def action(self, observation: Observation, tick: Tick) -> JointValues:
        """The policy's goal while it is in charge; the held pose otherwise."""
        if self.in_charge(tick.start_s) and self._ready():
            if not self._was_in_charge:
                self.driver.reset()
                self._was_in_charge = True
                self._warmup_started_s = tick.start_s
                self.first_action_s = None
            goal = self.driver.action(observation, tick)
            if self.first_action_s is None and self.driver.has_acted and self._warmup_started_s is not None:
                self.first_action_s = tick.start_s - self._warmup_started_s
            self._hold = goal
            return goal
        if self._was_in_charge:
            self.driver.reset()
            self._was_in_charge = False
            self.on_transition("the policy hands over to a hold")
            if self.start is not None:
                self._hold, self._to_start = self.start.pose, True
        if self._hold is None:
            self._hold = observation.state() if self.start is None else self.start.pose
        return self._hold

    def _ready(self) -> bool:
        """Whether the policy may take charge: at once, or once the arms reached the start pose."""
        if self._was_in_charge or not self._to_start or self.start is None:
            return True
        self._to_start = not self.start.reached()
        return not self._to_start

    def pause(self, hold: JointValues) -> None:
        """Another source drives for now (a person correcting): the engine drops its queue.

        The next tick the policy is in charge starts it again from a fresh observation, as at an
        episode's start (its first action is a transition); until then, and between episodes, the
        arms hold `hold`.
        """
        self.driver.reset()
        self._was_in_charge = False
        self._hold, self._to_start = hold, False  # back to the policy from here, in the same episode

    def between_episodes(self, last_sent: JointValues) -> None:
        """An episode ended while another source drove: hold where it left the arms, or go to the start pose."""
        self.pause(last_sent)
        if self.start is not None:
            self._hold, self._to_start = self.start.pose, True

    def on_key(self, key: object) -> None:
        """No keys of its own (a correction source adds the take-over)."""

    def episode_notes(self) -> dict[str, object]:
        """Nothing to add to a quality card."""
        return {}

    def step_facts(self, step: Step) -> Mapping[str, float]:
        """Per-frame facts for the evaluation dataset's sidecar (never features)."""
        facts = {f"inference.{key}": float(value) for key, value in self.driver.facts().items()}
        facts["inference.first_action_s"] = float("nan") if self.first_action_s is None else self.first_action_s
        facts.update({f"policy.{key}": float(value) for key, value in step.requested.to_flat().items()})
        return facts
