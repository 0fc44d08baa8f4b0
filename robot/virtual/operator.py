"""The scripted operator: a person's hands on the virtual arms, driven by trajectories.

Hands only move joints whose torque is off (leader arms, or followers during calibration). The
operator is evaluated lazily: before the rig answers a packet it brings every hand to the time of
that packet, so no thread is needed. Hand tremor is a few seeded sinusoids of 1-2 encoder steps.
"""

import math
import random
from collections.abc import Collection
from dataclasses import dataclass

from robot.joints import GRIPPER, JOINT_NAMES
from robot.virtual.motor import Motor
from robot.virtual.profiles import JointProfile
from robot.virtual.trajectories import Trajectory, sample

TREMOR_STEPS = 1.5  # amplitude of hand noise, encoder steps
HAND_STEP_S = 0.01  # how finely hand motion between packets is replayed, s
MAX_HAND_STEPS = 200  # cap on replay steps per call after a long idle gap
_TREMOR_HZ = (0.7, 1.9, 4.3)
# Where the cloth stops a closing follower gripper, as a fraction of its range.
CLOTH_CONTACT_FRACTION = 0.28


@dataclass
class VirtualArm:
    """One arm as the operator sees it: its motors in joint order and its joint profiles."""

    name: str
    motors: list[Motor]
    profiles: dict[str, JointProfile]

    def to_actual(self, joint: str, fraction: float) -> float:
        """A fraction of the joint's range of motion, in actual encoder steps."""
        profile = self.profiles[joint]
        low = profile.homing_offset + profile.range_min
        high = profile.homing_offset + profile.range_max
        return low + fraction * (high - low)

    def to_fraction(self, joint: str, actual: float) -> float:
        """Inverse of `to_actual`."""
        profile = self.profiles[joint]
        low = profile.homing_offset + profile.range_min
        high = profile.homing_offset + profile.range_max
        return (actual - low) / (high - low)

    def motor(self, joint: str) -> Motor:
        """The motor driving `joint`."""
        return self.motors[JOINT_NAMES.index(joint)]


@dataclass
class _Playing:
    trajectory: Trajectory
    start_s: float
    speed: float
    loop: bool
    start_fractions: dict[str, dict[str, float]]
    cycle: int = 0


class ScriptedOperator:
    """Moves the hands of the virtual rig along trajectories, with tremor."""

    def __init__(
        self,
        arms: dict[str, VirtualArm],
        seed: int = 0,
        tremor_steps: float = TREMOR_STEPS,
        moved: Collection[str] | None = None,
    ) -> None:
        """`moved`: the arms whose hands this operator drives (default all of `arms`)."""
        self.tremor_steps = tremor_steps
        rng = random.Random(seed)
        # Drawn for every arm, so an arm's tremor does not depend on which others are moved.
        self._phases = {
            (arm, joint): [rng.uniform(0, 2 * math.pi) for _ in _TREMOR_HZ] for arm in arms for joint in JOINT_NAMES
        }
        self.arms = arms if moved is None else {name: arm for name, arm in arms.items() if name in moved}
        self._playing: _Playing | None = None
        self._finished: str | None = None
        self._applied_s: float | None = None

    def play(self, trajectory: Trajectory, t_s: float, *, speed: float = 1.0, loop: bool = False) -> float:
        """Start `trajectory` now; returns its duration in seconds at this speed."""
        self.apply(t_s)
        starts = {
            name: {j: arm.to_fraction(j, arm.motor(j).joint.position) for j in JOINT_NAMES}
            for name, arm in self.arms.items()
            if name in trajectory.keyframes
        }
        self._playing = _Playing(trajectory, t_s, max(1e-3, speed), loop, starts)
        self._finished = None
        return trajectory.duration_s / self._playing.speed

    def stop(self, t_s: float) -> None:
        """Stop playing; hands stay where they are."""
        self.apply(t_s)
        self._playing = None

    def set_hand(self, arm: str, joint: str, fraction: float | None, t_s: float) -> None:
        """Hold one joint at a fraction of its range (None lets go of it)."""
        self.apply(t_s)
        target = self.arms[arm]
        target.motor(joint).hand_actual = None if fraction is None else target.to_actual(joint, fraction)

    def status(self, t_s: float) -> dict[str, object]:
        """What the operator is doing: trajectory name, progress, whether it finished."""
        self.apply(t_s)
        playing = self._playing
        if playing is None:
            return {"playing": None, "finished": self._finished}
        elapsed = (t_s - playing.start_s) * playing.speed
        return {
            "playing": playing.trajectory.name,
            "elapsed_s": elapsed / playing.speed,
            "duration_s": playing.trajectory.duration_s / playing.speed,
            "loop": playing.loop,
            "finished": self._finished,
        }

    def apply(self, t_s: float) -> None:
        """Bring every hand to time `t_s` (call before the rig answers a packet).

        The hands move between packets too: the gap since the last call is replayed in small
        steps, each settling the mechanics under the hand position of that moment.
        """
        previous = self._applied_s
        self._applied_s = t_s if previous is None else max(previous, t_s)
        if self._playing is None:
            return
        if previous is not None and t_s > previous:
            step = max(HAND_STEP_S, (t_s - previous) / MAX_HAND_STEPS)
            t = previous + step
            while t < t_s and self._playing is not None:
                self._apply_at(self._playing, t)
                t += step
        if self._playing is not None:
            self._apply_at(self._playing, t_s)

    def _apply_at(self, playing: _Playing, t_s: float) -> None:
        trajectory = playing.trajectory
        elapsed = (t_s - playing.start_s) * playing.speed
        duration = trajectory.duration_s
        if elapsed >= duration and not playing.loop:
            elapsed = duration
        elif playing.loop and duration > 0:
            cycle = int(elapsed // duration)
            if cycle > playing.cycle:
                # A new lap starts where the last one ended (its final pose), not where the
                # hands were when playing began: no jump at the seam.
                playing.cycle = cycle
                playing.start_fractions = {
                    name: sample(frames, duration, playing.start_fractions[name])
                    for name, frames in trajectory.keyframes.items()
                    if name in playing.start_fractions
                }
            elapsed %= duration
        for name, frames in trajectory.keyframes.items():
            arm = self.arms.get(name)
            if arm is None:
                continue
            fractions = sample(frames, elapsed, playing.start_fractions[name])
            for joint in JOINT_NAMES:
                motor = arm.motor(joint)
                # Settle the mechanics under the old hand position before moving the hand.
                motor.advance(t_s)
                motor.hand_actual = arm.to_actual(joint, fractions[joint]) + self._tremor(name, joint, t_s)
        for name, windows in trajectory.grasps.items():
            arm = self.arms.get(name)
            if arm is None:
                continue
            holding = any(start <= elapsed < end for start, end in windows)
            contact = arm.to_actual(GRIPPER, CLOTH_CONTACT_FRACTION) if holding else None
            gripper = arm.motor(GRIPPER)
            if gripper.joint.object_contact != contact:
                gripper.advance(t_s)
                gripper.joint.object_contact = contact
        if elapsed >= duration and not playing.loop:
            self._finished = trajectory.name
            self._playing = None
            if trajectory.release_at_end:
                for name in trajectory.keyframes:
                    for motor in self.arms[name].motors if name in self.arms else ():
                        motor.hand_actual = None

    def _tremor(self, arm: str, joint: str, t_s: float) -> float:
        if not self.tremor_steps:
            return 0.0
        phases = self._phases[(arm, joint)]
        wave = sum(math.sin(2 * math.pi * hz * t_s + phase) for hz, phase in zip(_TREMOR_HZ, phases, strict=True))
        return self.tremor_steps * wave / len(_TREMOR_HZ)
