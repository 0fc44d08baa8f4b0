"""Turning control steps into dataset frames, with the timing facts of each one.

    Step (tick, observation: 12 joints + synced frames, sent action)
        -> state (12 follower joints), action (12, what the followers were sent), images by camera
        -> timing: tick deadline/start/lateness, bus read time, each camera's capture time and age, skew,
           and the state and action as the rig logged them
        -> FrameSink.add_frame(...)          (the dataset writer, in its own process)
        -> EpisodeLog                        (for the episode's quality card)

The action recorded is the goal the followers were actually sent, after the safety layer: that is
what the arms were asked to do at that moment, so that is what a policy should learn to ask for.
"""

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import numpy as np

from robot.cameras.camera import Camera
from robot.control_loop import Step
from robot.joints import BIMANUAL_KEYS, GRIPPER
from robot.safety.guard import Intervention, SafetyEvent
from teleop.dataset.sidecar import IDLE_SPEED_DEG_S
from teleop.quality import EpisodeLog

_KEY_INDEX = {key: i for i, key in enumerate(BIMANUAL_KEYS)}


class FrameSink(Protocol):
    """Where frames go (the dataset writer)."""

    def add_frame(
        self,
        state: np.ndarray,
        action: np.ndarray,
        images: Mapping[str, np.ndarray],
        timing: Mapping[str, float],
    ) -> bool:
        """Hand over one frame; False when it could not be taken (counted by the caller)."""
        ...


def timing_facts(step: Step) -> dict[str, float]:
    """The per-frame timing facts kept beside the dataset (never fed to a policy)."""
    tick, observation = step.tick, step.observation
    facts = {
        "tick_deadline_s": tick.deadline_s,
        "tick_start_s": tick.start_s,
        "tick_late_s": tick.late_s,
        "ticks_skipped": float(tick.skipped),
        "bus_read_s": observation.bus_time_s,
        "observation_stale": float(step.stale_observation),
    }
    frames = observation.frames
    if frames is not None:
        facts["camera_skew_s"] = frames.skew_s
        for name, frame in frames.frames.items():
            facts[f"{name}.capture_s"] = frame.capture_time_s
            facts[f"{name}.age_s"] = frames.ages_s[name]
            facts[f"{name}.sequence"] = float(frame.sequence)
    return facts


ALL_JOINTS_MASK = (1 << len(BIMANUAL_KEYS)) - 1  # a held tick: the watchdog replaced the whole request


def changed_mask(events: Sequence[SafetyEvent]) -> int:
    """Bit i set: the safety layer changed joint BIMANUAL_KEYS[i] this frame (any intervention).

    Kept per frame beside the dataset (as `safety.changed_mask`, and `safety.relief_mask` for the
    gripper relief alone), so a check of "sent = the request after the safety layer" knows which
    joints to compare exactly and which were clamped.
    """
    mask = 0
    for event in events:
        side = event.arm.split("_", 1)[0]
        mask |= 1 << _KEY_INDEX[f"{side}_{event.joint}.pos"]
    return mask


class EpisodeRecorder:
    """Feeds one episode's steps to a sink and keeps the log its quality card is made from."""

    def __init__(
        self,
        sink: FrameSink,
        cameras: Mapping[str, Camera],
        step_facts: Callable[[Step], Mapping[str, float]] | None = None,
    ) -> None:
        self.sink = sink
        self.cameras = cameras
        # Facts the action source adds per frame (a policy's chunk id, latency, starved tick): kept beside
        # the dataset with the timing facts, never fed to a policy.
        self.step_facts = step_facts
        self.camera_names = tuple(cameras)
        self.log = EpisodeLog()
        self._last_sequence: dict[str, int] = {}
        self._previous: tuple[float, np.ndarray] | None = None
        self._body = [i for i, key in enumerate(BIMANUAL_KEYS) if GRIPPER not in key]

    def add(self, step: Step, events_before: int, events: list, peak_temperature_c: float, held: bool = False) -> None:
        """Record one step.

        `events[events_before:]` are the safety events of this step; `held`: the watchdog held the
        followers this tick, so every joint was sent the held pose instead of the request.
        """
        # The dataset's vectors are the joint values' own order (BIMANUAL_KEYS), in float32.
        state = step.observation.state().vector.astype(np.float32)
        action = step.sent.vector.astype(np.float32)
        images: dict[str, np.ndarray] = {}
        frames = step.observation.frames
        if frames is not None:
            images = {name: frames.frames[name].image for name in self.camera_names}
            self.log.add_frames(frames.skew_s, frames.duplicated)
            self._count_lost_frames()
        facts = timing_facts(step)
        # The rig's own log of the frame, kept beside the dataset: what was read and what was sent.
        facts.update({f"state.{k}": float(v) for k, v in zip(BIMANUAL_KEYS, state, strict=True)})
        facts.update({f"action.{k}": float(v) for k, v in zip(BIMANUAL_KEYS, action, strict=True)})
        step_events = events[events_before:]
        facts["safety.changed_mask"] = float(ALL_JOINTS_MASK if held else changed_mask(step_events))
        facts["safety.held"] = float(held)
        facts["safety.relief_mask"] = float(changed_mask([e for e in step_events if e.kind is Intervention.RELIEF]))
        # A transition (a policy taking charge, a hold ending): the joints the ramp slowed this frame.
        facts["safety.ramp_mask"] = float(changed_mask([e for e in step_events if e.kind is Intervention.RAMP]))
        if self.step_facts is not None:
            facts.update(self.step_facts(step))
        if not self.sink.add_frame(state, action, images, facts):
            self.log.writer_dropped += 1
        log = self.log
        log.starts_s.append(step.tick.start_s)
        log.limit_hits += sum(1 for e in events[events_before:] if e.kind is Intervention.LIMIT)
        log.peak_temperature_c = max(log.peak_temperature_c, peak_temperature_c)
        if self._previous is not None:
            dt = step.tick.start_s - self._previous[0]
            speeds = np.abs(state[self._body] - self._previous[1][self._body]) / dt if dt > 0 else np.zeros(1)
            log.moving.append(bool(speeds.max() >= IDLE_SPEED_DEG_S))
        self._previous = (step.tick.start_s, state)

    def _count_lost_frames(self) -> None:
        """Gaps in what each camera delivered since the last tick, whichever frames were used.

        Counting in the camera's own ring (not in the frames picked per tick) makes the count
        exact: a late tick that skips a delivered frame is not a camera fault.
        """
        for name, camera in self.cameras.items():
            delivered = camera.frames()
            if not delivered:
                continue
            last = self._last_sequence.get(name)
            if last is None:  # the episode starts here: count from the newest frame on
                self._last_sequence[name] = delivered[-1].sequence
                continue
            for frame in delivered:
                if frame.sequence > last:
                    self.log.add_lost(name, frame.sequence - last - 1)
                    last = frame.sequence
            self._last_sequence[name] = last
