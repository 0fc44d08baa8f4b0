"""What a recording session is given whole: the source it records, the keys, where it speaks, its rules.

    RecordingSession(rig, writer, config, rules, source=leaders, keys=reader, out=console_out, stop=flag)

Each is a small object, never a loose callback: the source that drives the arms says when it is
engaged and what to keep beside each frame; the keys are polled once a tick; the output shows a
quality card and a line of news; the rules say how an episode starts, ends and is judged.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from robot.control_loop import ActionSource, Step
from teleop.gesture import GestureConfig
from teleop.highlight import Highlights
from teleop.keys import Key
from teleop.live_scoring import LiveScorer
from teleop.quality import QualityCard, QualityGates


class SessionSource(Protocol):
    """What the session asks of the source it records: when it drives the arms, and what to keep."""

    @property
    def engaged(self) -> bool:
        """Whether the source drives the followers now (an episode starts only then)."""
        ...

    def step_facts(self, step: Step) -> Mapping[str, float]:
        """Per-frame facts for the dataset's sidecar (never features); {} when there are none."""
        ...

    def on_key(self, key: Key) -> None:
        """A key the session does not handle (a rollout's take-over); most sources ignore them."""
        ...

    def episode_notes(self) -> Mapping[str, object]:
        """More facts for the quality card of the episode being saved; {} when there are none."""
        ...


class RecordedSource(ActionSource, SessionSource, Protocol):
    """An action source a recording run can follow: it drives the loop and the session records it."""


class KeySource(Protocol):
    """The keys a person presses (the terminal's, a foot pedal's)."""

    def poll(self) -> list[Key]:
        """Keys pressed since the last poll; never blocks."""
        ...


class SessionOutput(Protocol):
    """Where the session speaks: a saved episode's quality card, and a line of news."""

    def card(self, card: QualityCard) -> None:
        """Show a saved episode's quality card."""
        ...

    def event(self, text: str) -> None:
        """Show a line of news (a discarded episode, a failed save)."""
        ...


class NoKeys:
    """No keyboard (standard input is no terminal, or a test): the session runs on its timing alone."""

    def poll(self) -> list[Key]:
        """Nothing is ever pressed."""
        return []


NO_KEYS = NoKeys()


class Silent:
    """An output that shows nothing (a benchmark, a test that reads the session's own record)."""

    def card(self, card: QualityCard) -> None:
        """Show nothing."""

    def event(self, text: str) -> None:
        """Show nothing."""


SILENT = Silent()


@dataclass(frozen=True)
class EpisodeRules:
    """How an episode starts, ends and is judged, beyond the session's timing (SessionConfig)."""

    gates: QualityGates  # so101-record re-records an episode that fails them; so101-deploy only marks it
    gesture: GestureConfig  # the leaders' squeeze that starts and ends an episode (off for a policy)
    # Live scores typed when a rollout ends (so101-deploy --live_scores.enabled=true): the next waits
    scorer: LiveScorer | None = None
    # An episode ends when the source stops being engaged (each correction one episode)
    end_when_disengaged: bool = False
    # No episode until k, which keeps the last seconds (so101-deploy --mode=highlight)
    highlights: Highlights | None = None
