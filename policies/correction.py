"""Corrections during a rollout: the person takes over with the leaders, corrects, and hands back.

    POLICY ──take over (c or Tab, the pedal, the gesture)──> HANDOVER ──leaders there (or timeout)──> PERSON
      ^     followers hold their last goal; both leaders         leaders released; followers      │
      │     driven under torque, ramped, to the followers        follow them (intervention=True)  │
      └───────────── hand back (c or Tab): the policy restarts from a fresh observation <──────────┘

A hand back during HANDOVER cancels it. An episode that ends in any phase releases the leaders and
holds the followers (the rollout's hold between episodes). Every change of the source of the
followers' goals is a transition of the safety layer (`rig.begin_transition`): the person taking
over (the followers ramp to the leaders if they are not quite there), and the policy taking charge
again (PolicySource signals its first action). The leaders' own goals are ramped by their guards
(robot/safety/leader_drive.py). Each frame says which source drove it (`control.source`), and
whether a person did (`control.intervention`, recorded as LeRobot's `intervention` feature).
"""

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from enum import IntEnum, StrEnum
from pathlib import Path

from policies.rollout import RolloutSource
from robot.config_checks import reject_non_finite
from robot.control_loop import Step
from robot.errors import ConfigError, RobotError
from robot.joint_values import JointValues
from robot.loop_timer import Tick
from robot.rig import BimanualRig, Observation
from teleop.gesture import GestureConfig, GestureDetector
from teleop.keys import Key
from teleop.pedal import KEY_CODES


class Control(IntEnum):
    """Who drives the followers this tick (the per-frame fact `control.source`)."""

    POLICY = 0
    HANDOVER = 1  # the followers hold while the leaders are driven to them
    PERSON = 2


class CorrectionRecording(StrEnum):
    """What a corrected rollout records."""

    FULL = "full"  # every frame of every attempt, the person's frames tagged (LeRobot's record_autonomous)
    CORRECTIONS_ONLY = "corrections_only"  # each correction is one episode (LeRobot's default DAgger mode)


@dataclass(frozen=True)
class CorrectionConfig:
    """Taking over a rollout with the leader arms (so101-deploy `--correction.*`)."""

    enabled: bool = False  # c or Tab (or the pedal, or the leader-gripper squeeze) takes over; again hands back
    record: CorrectionRecording = CorrectionRecording.FULL  # full attempts, or corrections only
    arrive_tolerance_deg: float = 3.0  # the leaders are "there" within this of the followers, degrees (gripper: %)
    handover_timeout_s: float = 6.0  # the leaders are released after this even if not there (the followers ramp)
    gesture: bool = True  # squeezing both leader grippers (held still for a second) takes over too
    pedal_device: Path | None = None  # a foot pedal: /dev/input/by-id/*-event-kbd (its pedal_key toggles)
    pedal_key: str = "KEY_A"  # the key code the pedal sends (LeRobot's DAgger pedal: KEY_A)

    def __post_init__(self) -> None:
        reject_non_finite(self, "correction")
        if self.pedal_key not in KEY_CODES:
            raise ConfigError(f"correction.pedal_key={self.pedal_key!r}: expected one of {', '.join(KEY_CODES)}")
        if not self.arrive_tolerance_deg > 0 or not self.handover_timeout_s > 0:
            raise ConfigError(
                f"correction.arrive_tolerance_deg={self.arrive_tolerance_deg}, handover_timeout_s="
                f"{self.handover_timeout_s}: both must be > 0"
            )


@dataclass
class Handover:
    """One take-over's timing, seconds on the loop's clock (kept with the episode's quality card)."""

    requested_s: float  # the take-over key (or pedal, gesture)
    in_control_s: float | None = None  # the leaders were released: the person has the arms
    handed_back_s: float | None = None  # the hand-back key (or the episode's end)
    timed_out: bool = False  # the leaders were released before they got there
    leader_steps_deg: list[float] = field(default_factory=list)  # the largest leader goal step, each tick

    def summary(self) -> dict[str, float | bool | None]:
        """JSON-friendly: times relative to the request, the largest leader step."""
        base = self.requested_s
        facts = asdict(self)
        facts.pop("leader_steps_deg")
        facts["to_person_s"] = None if self.in_control_s is None else self.in_control_s - base
        facts["correction_s"] = (
            None if self.handed_back_s is None or self.in_control_s is None else self.handed_back_s - self.in_control_s
        )
        facts["largest_leader_step_deg"] = max(self.leader_steps_deg, default=0.0)
        return facts


class CorrectionSource:
    """A rollout the person can take over: a `RecordedSource` over a `RolloutSource` and the leaders."""

    def __init__(
        self,
        rollout: RolloutSource,
        rig: BimanualRig,
        config: CorrectionConfig,
        *,
        on_event: Callable[[str], None] = lambda text: None,
    ) -> None:
        if not rig.has_leaders:
            raise ConfigError(
                "--correction.enabled=true needs the leader arms: set ports.left_leader and ports.right_leader"
                " in the rig file, or run without --correction.enabled"
            )
        self.rollout = rollout
        self.rig = rig
        self.config = config
        self.on_event = on_event
        self.control = Control.POLICY
        self.handovers: list[Handover] = []
        self._episode_from = 0  # index of this episode's first handover
        self._requested = False
        self._hold: JointValues | None = None
        self._in_episode = False  # the policy was engaged in the episode under way
        self._stuck = False  # the leaders could not be driven: the followers hold until the hand back
        self._gesture = self._new_gesture()

    # --- requests (keys, pedal, gesture; polled on the control thread) ----------------------------

    def _new_gesture(self) -> GestureDetector:
        # Leaders often rest with their grippers closed (before a rollout, or let go after a correction):
        # only a squeeze after both were seen open counts.
        return GestureDetector(GestureConfig(enabled=self.config.gesture), armed=False)

    def toggle(self) -> None:
        """Take over (while the policy drives an episode) or hand back (while a person does)."""
        self._requested = True

    # --- the source --------------------------------------------------------------------------------

    @property
    def engaged(self) -> bool:
        """Full attempts: the policy drove the episode's first frame, and every phase after records.

        Corrections only: the person has the arms (each correction is one episode).
        """
        if self.config.record is CorrectionRecording.CORRECTIONS_ONLY:
            return self.control is Control.PERSON
        return self._in_episode or self.rollout.engaged

    def action(self, observation: Observation, tick: Tick) -> JointValues:
        """The goals of whoever drives now; a requested change of driver starts at this tick."""
        now = tick.start_s
        running = self.rollout.in_charge(now)
        if not running:
            if self._requested:
                self.on_event("nothing to take over: no rollout is running (the arms hold between episodes)")
            self._requested = False
            if self.control is not Control.POLICY:
                self._end_correction(now)
                # Hold where the person left the followers (or, with a start pose, go back there).
                self.rollout.between_episodes(self._last_sent())
                self.rig.begin_transition("the episode ended: hold")
            self._in_episode = False
            return self.rollout.action(observation, tick)
        if self.control is Control.POLICY and observation.leaders:
            self._requested |= self._gesture.update(observation.leader_action(), now)
        if self._requested:
            self._requested = False
            self._switch(observation, now)
        match self.control:
            case Control.POLICY:
                goal = self.rollout.action(observation, tick)
                if not self._in_episode and self.rollout.engaged:
                    self._in_episode = True  # an episode starts recording: its handovers start here
                    self._episode_from = len(self.handovers)
                return goal
            case Control.HANDOVER:
                return self._drive_leaders(observation, tick)
            case Control.PERSON:
                return observation.leader_action()

    def step_facts(self, step: Step) -> Mapping[str, float]:
        """The rollout's facts, and who drove this frame (`control.*`, never features but one)."""
        facts = dict(self.rollout.step_facts(step))  # the policy's facts are NaN while it does not drive
        last = self.handovers[-1] if self.handovers else None
        facts["control.source"] = float(self.control)
        facts["control.intervention"] = float(self.control is Control.PERSON)
        facts["control.handover"] = float(len(self.handovers) - 1)
        active = last is not None and self.control is not Control.POLICY
        facts["control.since_request_s"] = step.tick.start_s - last.requested_s if active and last else math.nan
        return facts

    def on_key(self, key: Key) -> None:
        """The take-over key (c or Tab): take over, or hand back."""
        if key is Key.TAKE_OVER:
            self.toggle()

    def episode_notes(self) -> dict[str, object]:
        """The handovers of the episode being saved, for its quality card."""
        return {"handovers": [handover.summary() for handover in self.handovers[self._episode_from :]]}

    def status_text(self) -> str:
        """Who has the arms, for the status line."""
        match self.control:
            case Control.POLICY:
                return "policy drives: c/Tab take over" if self.rollout.engaged else "arms held"
            case Control.HANDOVER:
                return "HANDOVER: leaders moving to the followers"
            case Control.PERSON:
                return "YOU HAVE THE ARMS: c/Tab hand back"

    # --- transitions -------------------------------------------------------------------------------

    def _switch(self, observation: Observation, now: float) -> None:
        if self.control is Control.POLICY:
            if not self.rollout.engaged:
                self.on_event("nothing to take over yet: the policy has not acted (its first chunk is coming)")
                return
            self._take_over(observation, now)
        else:
            self._end_correction(now)  # the rollout starts the policy again from this tick's observation
            self.rollout.pause(self._last_sent())  # until then (a reset between episodes too) the arms hold here
            self.rig.begin_transition("the person hands back: hold until the policy acts")
            self.on_event("the policy has the arms again")

    def _take_over(self, observation: Observation, now: float) -> None:
        # The followers hold the goals they were last sent (their guards' view), not a fresh reading.
        self._hold = self._last_sent()
        self.rollout.pause(self._hold)
        self.rig.begin_transition("the policy pauses: hold")
        self._stuck = False
        try:
            self.rig.leader_drive().begin(observation.leader_action())
        except RobotError as error:
            self._stuck = True  # the person never gets arms the leaders were not brought to
            self.on_event(f"the leaders cannot be driven ({error}); the followers hold. Next: hand back with c or Tab")
        self.handovers.append(Handover(requested_s=now))
        self.control = Control.HANDOVER
        self.on_event("take over: the leaders are moving to the followers; keep your hands off them until told")

    def _drive_leaders(self, observation: Observation, tick: Tick) -> JointValues:
        drive, handover = self.rig.leader_drive(), self.handovers[-1]
        hold = self._hold or observation.state()
        if self._stuck:
            return hold
        target, leaders = observation.state(), observation.leader_action()
        arrived = drive.arrived(leaders, target, self.config.arrive_tolerance_deg)
        late = tick.start_s - handover.requested_s >= self.config.handover_timeout_s
        if not drive.driving or arrived or late:
            if late and not arrived:
                handover.timed_out = True
                self.on_event(
                    f"the leaders did not reach the followers in {self.config.handover_timeout_s:g} s"
                    f" ({drive.distance(leaders, target)}): released anyway; the followers ramp to them"
                )
            self._give_to_person(tick.start_s)
            # The person's pose from this very tick: the transition just begun ramps to it. (Returning the
            # hold here ended the transition at once, since the hold is what was sent, and the leaders'
            # pose, up to arrive_tolerance_deg away, then passed in one step: the handover benchmark saw it.)
            return observation.leader_action()
        before = JointValues.from_sides({side: guard.last_sent for side, guard in drive.guards.items()})
        sent = drive.step(target, tick.start_s, 1.0 / self.rig.config.fps)
        handover.leader_steps_deg.append(sent.max_abs_difference(before))
        return hold

    def _give_to_person(self, now: float) -> None:
        self._release_leaders()
        self.rig.begin_transition("the person takes over")
        self.handovers[-1].in_control_s = now
        self.control = Control.PERSON
        self.on_event("you have the arms: correct, then press c or Tab to hand back")

    def _last_sent(self) -> JointValues:
        return JointValues.from_sides({side: guard.last_sent for side, guard in self.rig.guards.items()})

    def _release_leaders(self) -> None:
        drive = self.rig.leader_drive()
        if drive.driving:
            try:
                drive.release()
            except RobotError as error:
                self.on_event(f"a leader could not be released ({error}): it stays stiff until the run ends")

    def _end_correction(self, now: float) -> None:
        self._release_leaders()
        self._stuck = False
        self._gesture = self._new_gesture()
        if self.handovers and self.handovers[-1].handed_back_s is None:
            self.handovers[-1].handed_back_s = now
        self.control = Control.POLICY
