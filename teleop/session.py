"""A recording session as an explicit state machine, driven once per control tick.

    READY ──start──> RECORDING ──end (time, →, gesture, q)──> card ──keep──> save (background) ──> RESET
      ^                 │  └──←/r, or a failed gate: discard──────────────────────────────────────> RESET
      │                 └──e: e-stop (episode discarded) ─────────────────────────────────────────> DONE
    RESET ──reset time, →, or gesture (once the save is done)──> RECORDING     ... last episode ──> DONE

Saving runs in a background thread while the person resets the scene; the next episode starts only
once it is durable, and the session ends once the last one is. An episode counts as recorded only
when its save has returned: a save whose videos came out short was rolled back by the writer and
the episode is recorded again; any other failed save is reported and ends the session. Keys and the
leader-gripper gesture are polled on the control thread, so no state is shared with other threads
except the save's outcome (see `episode_save.py`).
"""

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Protocol

import numpy as np

from robot.config_checks import reject_non_finite
from robot.control_loop import Step
from robot.errors import ConfigError
from robot.rig import BimanualRig
from robot.stop_flag import StopFlag
from teleop.dataset.errors import ShortVideoError
from teleop.episode_save import BackgroundSave, UnsavedEpisode
from teleop.gesture import GestureDetector
from teleop.highlight import Tick, tick_of
from teleop.keys import Key
from teleop.quality import QualityCard, quality_card
from teleop.recorder import EpisodeRecorder
from teleop.session_links import NO_KEYS, SILENT, EpisodeRules, KeySource, SessionOutput, SessionSource

logger = logging.getLogger(__name__)


class Phase(StrEnum):
    """Where the session is."""

    READY = "ready"
    RECORDING = "recording"
    RESET = "reset"
    DONE = "done"


@dataclass(frozen=True)
class SessionConfig:
    """How many episodes, how long, and how they start."""

    num_episodes: int = 50  # episodes to record in this run (added to a resumed dataset's)
    episode_s: float = 30.0  # longest an episode runs before it is ended and saved, seconds
    reset_s: float = 10.0  # time to reset the scene between episodes, seconds
    task: str = "Fold the cloth"  # the task text stored with every episode
    # Wait for the gesture (or →) before each episode instead of starting when the reset time is up
    start_on_gesture: bool = False

    def __post_init__(self) -> None:
        reject_non_finite(self, "session")
        if self.num_episodes < 1:
            raise ConfigError(f"session.num_episodes={self.num_episodes}: must be >= 1")
        if self.episode_s <= 0 or self.reset_s < 0:
            raise ConfigError(f"session.episode_s={self.episode_s}, reset_s={self.reset_s}: need > 0 and >= 0")
        if not self.task.strip():
            raise ConfigError("session.task is empty: say what the demonstrations do, e.g. 'Fold the cloth'")


class EpisodeWriter(Protocol):
    """The dataset writer as the session uses it."""

    def begin_episode(self, task: str) -> int:
        """Start a new episode; returns its index."""
        ...

    def add_frame(
        self, state: np.ndarray, action: np.ndarray, images: Mapping[str, np.ndarray], timing: Mapping[str, float]
    ) -> bool:
        """Hand over one frame."""
        ...

    def save_episode(self, quality: dict) -> Any:
        """Make the episode durable (blocking); raises if it is not."""
        ...

    @property
    def longest_save_s(self) -> float:
        """The longest `save_episode` can block before it returns or raises, seconds."""
        ...

    def discard_episode(self) -> None:
        """Drop the episode in progress."""
        ...


class RecordingSession:
    """A step hook that records episodes from the ticks of a teleoperation loop."""

    def __init__(
        self,
        rig: BimanualRig,
        writer: EpisodeWriter,
        config: SessionConfig,
        rules: EpisodeRules,
        *,
        source: SessionSource,
        keys: KeySource = NO_KEYS,
        out: SessionOutput = SILENT,
        stop: StopFlag | None = None,
    ) -> None:
        """`stop`: the loop's flag, set when the session is done (the loop is built with the same flag)."""
        self.rig = rig
        self.writer = writer
        self.config = config
        self.fps = rig.config.fps
        self.gates = rules.gates
        self.gesture = GestureDetector(rules.gesture)
        self.keys = keys
        self.source = source  # keys the session does not handle go to it (a rollout's take-over)
        self.out = out
        self.stop = stop if stop is not None else StopFlag()
        self.scorer = rules.scorer  # live scores typed when a rollout ends: the next episode waits for them
        self._finish_when_scored = False
        # An episode is exactly the time the source is engaged (a correction, in corrections-only mode)
        self.end_when_disengaged = rules.end_when_disengaged
        self.highlights = rules.highlights  # k keeps the last seconds and what follows (no episode otherwise)
        self.phase = Phase.READY
        self.paused = False
        self.recorded = 0  # episodes of this run that are durable on disk (their save returned)
        self.unsaved: list[UnsavedEpisode] = []  # episodes of this run whose save failed, in order
        self.save_failure: UnsavedEpisode | None = None  # the first failed save not recorded again
        self.cards: list[QualityCard] = []
        self.episode_index: int | None = None
        self._phase_since = time.monotonic()
        self._recorder: EpisodeRecorder | None = None
        self._recorded_s = 0.0
        self._save: BackgroundSave | None = None  # the last episode's save, until its outcome is counted
        self._stop_after_save = False
        self._events_mark = 0
        self._held_mark = 0  # the rig's held ticks when the last frame was recorded
        self._episode_frames = max(2, round(config.episode_s * self.fps))
        self.camera_names = tuple(rig.cameras)

    # --- the hook ----------------------------------------------------------------------------

    def on_step(self, step: Step) -> None:
        """Advance the state machine by one tick, recording the step if an episode is running."""
        self._collect_save()
        now = step.tick.start_s
        squeezed = bool(step.observation.leaders) and self.gesture.update(step.observation.leader_action(), now)
        for key in self.keys.poll():
            self._on_key(key, now)
        if self._finish_when_scored and not self._scoring():
            self._finish()
        if self.phase is Phase.DONE:
            return
        if self.phase is Phase.RECORDING:
            if squeezed:
                self._end_episode(now, keep=True)
            elif self.end_when_disengaged and not self.source.engaged:
                self._end_episode(now, keep=True)  # a correction handed back: it was one episode
            elif not self.paused and self.source.engaged:
                self._record(step)
                if self._recorder is not None and len(self._recorder.log.starts_s) >= self._episode_frames:
                    self._end_episode(now, keep=True)
        elif self.phase in (Phase.READY, Phase.RESET) and (self.start_due(now) or squeezed) and self.source.engaged:
            self._try_start(now)
        elif self.highlights is not None and self.source.engaged:
            self.highlights.remember(self._tick(step))

    def start_due(self, now: float) -> bool:
        """Whether the next episode is due to start (the reset time is up; not waiting for a gesture)."""
        if self.phase not in (Phase.READY, Phase.RESET) or self.config.start_on_gesture or self._save is not None:
            return False  # (not while the last episode is being made durable: it may have to be recorded again)
        if self._scoring():
            return False  # the operator is scoring the last rollout
        return self.phase is Phase.READY or now - self._phase_since >= self.config.reset_s

    def in_progress(self, now: float) -> bool:
        """Whether an episode is recording or due to start: an autonomous source should be in charge."""
        return self.phase is Phase.RECORDING or self.start_due(now)

    def _on_key(self, key: Key, now: float) -> None:
        match key:
            case Key.ESTOP:
                # Freeze first, whatever the writer then does; the next tick's act ends the loop with
                # a SafetyStopError, so the command reports the e-stop.
                self.rig.freeze("e-stop")
                self.phase = Phase.DONE
                self.abandon_episode()
            case Key.STOP:
                if self.phase is Phase.RECORDING:
                    self._stop_after_save = True
                    self._end_episode(now, keep=True)
                else:
                    self._stop_after_save = True
                    self._maybe_finish()
            case Key.PAUSE:
                self.paused = not self.paused
            case Key.NEXT:
                if self.phase is Phase.RECORDING:
                    self._end_episode(now, keep=True)
                elif self.phase in (Phase.READY, Phase.RESET):
                    self._try_start(now)
            case Key.RERECORD:
                if self.phase is Phase.RECORDING:
                    self._end_episode(now, keep=False)
            case Key.KEEP if self.highlights is not None:
                if self.phase is Phase.RECORDING:
                    self._end_episode(now, keep=True)
                elif self.phase in (Phase.READY, Phase.RESET):
                    self._try_start(now)
            case _:
                if self.scorer is None or not self.scorer.on_key(key):
                    self.source.on_key(key)

    # --- transitions -------------------------------------------------------------------------

    def _scoring(self) -> bool:
        return self.scorer is not None and self.scorer.pending

    def _try_start(self, now: float) -> None:
        if self._save is not None or self._scoring():
            return  # the previous episode is still being made durable, or scored
        self.episode_index = self.writer.begin_episode(self.config.task)
        self._recorder = EpisodeRecorder(self.writer, self.rig.cameras, self.source.step_facts)
        self._recorded_s = 0.0
        self._events_mark = len(self.rig.counters.events)
        self._held_mark = self.rig.counters.held_ticks
        if self.rig.sync is not None:
            self.rig.sync.reset()
        if self.highlights is not None:
            self.highlights.start()
        self._set_phase(Phase.RECORDING, now)

    def _record(self, step: Step) -> None:
        recorder = self._recorder
        if recorder is None:
            return
        tick = self._tick(step)
        if self.highlights is not None:
            self.highlights.record(recorder, tick)  # after the remembered ticks still queued
        else:
            recorder.add(tick.step, 0, list(tick.events), tick.peak_temperature_c, tick.held)
        if len(recorder.log.starts_s) > 1:
            self._recorded_s = recorder.log.starts_s[-1] - recorder.log.starts_s[0]

    def _tick(self, step: Step) -> Tick:
        """`step` with the rig's safety facts of it; the marks move on past it."""
        tick = tick_of(step, self.rig, self._events_mark, self._held_mark)
        self._events_mark, self._held_mark = len(self.rig.counters.events), self.rig.counters.held_ticks
        return tick

    def _end_episode(self, now: float, *, keep: bool) -> None:
        recorder, index = self._recorder, self.episode_index
        self._recorder = None
        if recorder is None or index is None:
            return
        if self.highlights is not None and keep:
            self.highlights.finish(recorder)  # the remembered ticks still queued are the episode's too
        elif self.highlights is not None:
            self.highlights.drop()
        if not keep or len(recorder.log.starts_s) < 2:
            self.writer.discard_episode()
            logger.info("episode %d discarded; it will be recorded again", index)
            self.out.event(f"episode {index} discarded: it will be recorded again")
        else:
            card = quality_card(index, recorder.log, self.fps, self.gates)
            self.cards.append(card)
            self.out.card(card)
            if card.verdict == "rerecord":
                self.writer.discard_episode()
                self.out.event(f"episode {index} failed its quality gates and is discarded: it will be recorded again")
            else:
                self._start_save(card)  # the session ends once the last episode is durable (`_collect_save`)
                if self.scorer is not None:
                    self.scorer.begin(index, card.frames)
        self._set_phase(Phase.RESET, now)
        self._maybe_finish()

    def _start_save(self, card: QualityCard) -> None:
        writer, quality = self.writer, card.as_dict() | dict(self.source.episode_notes())
        self._save = BackgroundSave(card, lambda: writer.save_episode(quality))

    def _collect_save(self, timeout_s: float = 0.0) -> None:
        """Count the last save once it has ended (waiting up to `timeout_s`): saved only if it returned."""
        save = self._save
        if save is None or not save.ended(timeout_s):
            return
        self._save = None
        if save.error is None:
            self.recorded += 1
            if self.recorded >= self.config.num_episodes and self.phase is not Phase.DONE:
                self._finish()
        else:
            # The writer rolled a short video back and can go on; other failures (disk full, writer dead)
            # would fail again, so the session ends.
            self._not_saved(save, str(save.error), retry=isinstance(save.error, ShortVideoError))

    def _not_saved(self, save: BackgroundSave, reason: str, *, retry: bool) -> None:
        """Report an episode whose save failed: record it again (`retry`) or end the session short."""
        unsaved = UnsavedEpisode(save.card.episode, reason)
        self.unsaved.append(unsaved)
        self.cards = [replace(card, verdict="not saved") if card is save.card else card for card in self.cards]
        logger.error("episode %d is not saved: %s", unsaved.index, reason)
        if retry and self.phase is not Phase.DONE:
            self.out.event(f"episode {unsaved.index} is NOT saved and will be recorded again: {reason}")
            return
        self.save_failure = self.save_failure or unsaved
        self.out.event(f"episode {unsaved.index} is NOT saved: {reason}")
        if self.phase is not Phase.DONE:
            self._finish()

    def _maybe_finish(self) -> None:
        if self._stop_after_save:
            self._finish()

    def _finish(self) -> None:
        if self._scoring() and self.phase is not Phase.DONE:
            self._finish_when_scored = True  # the arms hold while the last rollout is scored
            return
        self.phase = Phase.DONE
        self.stop.set()

    def _set_phase(self, phase: Phase, now: float) -> None:
        self.phase = phase
        self._phase_since = now

    # --- end -------------------------------------------------------------------------------

    def wait_for_save(self, timeout_s: float | None = None) -> None:
        """Block until the last save has ended (after the loop stopped), and count it.

        Waits up to `timeout_s`, by default the writer's own bound on a save (`longest_save_s`), so a
        save the writer may still complete is never given up on. One still running after that is
        reported as not saved.
        """
        if self._save is None:
            return
        limit = self.writer.longest_save_s if timeout_s is None else timeout_s
        self._collect_save(limit)
        if self._save is not None:
            save, self._save = self._save, None
            self._not_saved(save, f"its save had not ended after {limit:g} s", retry=False)

    def abandon_episode(self) -> None:
        """The loop ended abruptly (e-stop, error): drop the episode in progress, if any."""
        if self._recorder is not None:
            self._recorder = None
            self.writer.discard_episode()

    def status(self, now: float) -> str:
        """A short description for the status line."""
        total = self.config.num_episodes
        number = self.recorded + (1 if self.phase is Phase.RECORDING else 0)
        saving = self._save is not None
        match self.phase:
            case Phase.RECORDING:
                state = "PAUSED" if self.paused else "REC"
                text = f"episode {number}/{total} {state} {self._recorded_s:4.1f}/{self.config.episode_s:g} s"
            case Phase.RESET:
                left = max(0.0, self.config.reset_s - (now - self._phase_since))
                text = f"reset {left:4.1f} s" if not self.config.start_on_gesture else "reset: squeeze or →"
            case Phase.READY:
                text = "ready: squeeze both leader grippers or press →"
            case Phase.DONE:
                text = "done"
        if self.scorer is not None and self.scorer.pending:
            text = self.scorer.prompt()
        return text + ("  saving…" if saving else "")
