"""Doubles for the recording session's tests: a writer that records what it is asked, and the rig they use.

writer = WriterDouble()                  # begin/add/save/discard, remembered in order
RecordingSession(rig, writer, config, EpisodeRules(LENIENT, ...), source=..., keys=ScriptedKeys(poll))
EventLog()                               # the session's news, kept (its cards too)
CAMERAS                                  # the in-process rig's three small virtual cameras
"""

from collections.abc import Callable

from robot.cameras.config import CaptureConfig, VirtualCameraConfig
from robot.joints import CameraRole
from teleop.keys import Key
from teleop.quality import QualityCard, QualityGates


class WriterDouble:
    """A dataset writer that keeps every call and frame timing in memory; saves return at once."""

    longest_save_s = 10.0  # the session's final wait for a save (saves here return at once)

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.episodes: list[list[dict]] = []
        self.discarded: list[list[dict]] = []
        self.saved: list[int] = []
        self._current: list[dict] | None = None
        self._index = 0

    def begin_episode(self, task: str) -> int:
        self.calls.append("begin")
        self._current = []
        return self._index

    def add_frame(self, state, action, images, timing) -> bool:
        assert state.shape == (12,)
        assert action.shape == (12,)
        assert set(images) == {"left_wrist", "right_wrist", "overhead"}
        self._current.append(dict(timing))
        return True

    def save_episode(self, quality: dict) -> int:
        self.calls.append("save")
        self.episodes.append(self._current)
        self.saved.append(self._index)
        self._index += 1
        return self._index - 1

    def discard_episode(self) -> None:
        self.calls.append("discard")
        self.discarded.append(self._current)
        self._current = None


# These tests are about the session's state machine: a render thread that a busy machine starves for a
# quarter second is not what they test, so a frame may be 2 s old before a read refuses it (the 0.25 s
# default and its error are tests/robot/cameras').
PATIENT = CaptureConfig(max_frame_age_s=2.0)
CAMERAS = tuple(
    VirtualCameraConfig(name, view, width=96, height=72, phase_s=phase, seed=i, capture=PATIENT)
    for i, (name, view, phase) in enumerate(
        [
            ("left_wrist", CameraRole.LEFT_WRIST, 0.003),
            ("right_wrist", CameraRole.RIGHT_WRIST, 0.006),
            ("overhead", CameraRole.OVERHEAD, 0.009),
        ]
    )
)


# Timing gates wide open: these tests are about the state machine, and an in-process emulator with
# three render threads in one interpreter is not a fair test of loop timing (benchmarks do that).
LENIENT = QualityGates(min_fps=10, max_period_error_p99_ms=200, max_skew_p99_ms=200, max_dropped_frames=1000)


class ScriptedKeys:
    """Keys a test presses: `poll` decides, each tick, what is pressed."""

    def __init__(self, poll: Callable[[], list[Key]]) -> None:
        self.poll = poll


class EventLog:
    """The session's output, kept: its lines of news and its quality cards."""

    def __init__(self, events: list[str] | None = None) -> None:
        """`events`: the list the news goes to (a caller's, read after the run)."""
        self.events = events if events is not None else []
        self.cards: list[QualityCard] = []

    def card(self, card: QualityCard) -> None:
        self.cards.append(card)

    def event(self, text: str) -> None:
        self.events.append(text)
