"""Scoring a rollout with keys at its end, before the reset (so101-deploy `--live_scores.*`).

    episode ends (kept) ─> "score R1 of rollout 3: 0, h (½) or 1; s skips"   the next episode waits
        0 / h / 1 ─> the next criterion ... after the last one the score is written
        s         ─> the rollout is recorded as skipped (one key)

The score is written beside the dataset by `teleop.dataset.live_scores` (one JSON file per episode,
with the episode's length, so a file that no longer describes its episode is refused), and
so101-judge, -review and -report take it in as the operator's human labels. Keys are polled on the
control thread, like every other key of the session; nothing here touches the bus.
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from robot.config_checks import reject_non_finite
from robot.errors import ConfigError
from teleop.dataset.live_scores import LiveScore, LiveScoreError, write_live_score
from teleop.keys import Key

# The rubric's levels (evaluation/vocabulary.py SCORE_LEVELS), as keys: none, half, full.
LEVEL_KEYS: dict[Key, float] = {Key.SCORE_0: 0.0, Key.SCORE_HALF: 0.5, Key.SCORE_1: 1.0}


@dataclass(frozen=True)
class LiveScoreConfig:
    """Scoring each rollout with keys when it ends."""

    enabled: bool = False  # after each rollout, 0, h (half) or 1 per criterion (s skips); then the next
    operator: str = ""  # who scores (recorded as the reviewer of these labels); needed when enabled
    # The rubric's criteria, in the order asked (so101-judge's default rubric: R1 R2 R3)
    criteria: tuple[str, ...] = ("R1", "R2", "R3")

    def __post_init__(self) -> None:
        reject_non_finite(self, "live_scores")
        if self.enabled and not self.operator.strip():
            raise ConfigError("--live_scores.enabled=true needs a name: add --live_scores.operator=<your name>")
        if self.enabled and (not self.criteria or any(not c.strip() for c in self.criteria)):
            raise ConfigError(f"live_scores.criteria={list(self.criteria)}: name each criterion, e.g. '[R1,R2,R3]'")


class LiveScorer:
    """Asks for each criterion of each kept episode in turn; writes the score when the last one is in."""

    def __init__(self, config: LiveScoreConfig, root: Path, *, on_event: Callable[[str], None] = print) -> None:
        self.config = config
        self.root = root
        self.on_event = on_event
        self.written: list[LiveScore] = []
        self._episode: tuple[int, int] | None = None  # (index, frames) being scored
        self._scores: dict[str, float] = {}

    @property
    def pending(self) -> bool:
        """Whether an episode waits for its score (the next one does not start until it has it)."""
        return self.config.enabled and self._episode is not None

    def begin(self, episode: int, frames: int) -> None:
        """A kept episode ended: ask for its score."""
        if not self.config.enabled:
            return
        self._episode, self._scores = (episode, frames), {}
        self.on_event(self.prompt())

    def prompt(self) -> str:
        """What to type now."""
        if self._episode is None:
            return ""
        criterion = self.config.criteria[len(self._scores)]
        return f"score {criterion} of rollout {self._episode[0]}: 0, h (half) or 1; s skips this rollout"

    def on_key(self, key: Key) -> bool:
        """Take a scoring key; False when the key is not one (or nothing waits for a score)."""
        if self._episode is None or not (key in LEVEL_KEYS or key is Key.SKIP):
            return False
        index, frames = self._episode
        if key is Key.SKIP:
            self._write(LiveScore(index, self.config.operator, skipped=True, frames=frames))
            return True
        self._scores[self.config.criteria[len(self._scores)]] = LEVEL_KEYS[key]
        if len(self._scores) < len(self.config.criteria):
            self.on_event(self.prompt())
            return True
        self._write(LiveScore(index, self.config.operator, scores=dict(self._scores), frames=frames))
        return True

    def drop(self) -> None:
        """The run stops with a score still asked for: that rollout stays unscored (so101-review can label it)."""
        if self._episode is not None:
            self.on_event(f"rollout {self._episode[0]} was not scored live (score it in so101-review)")
        self._episode = None

    def _write(self, score: LiveScore) -> None:
        self._episode = None
        try:
            write_live_score(self.root, score)
        except (OSError, LiveScoreError) as error:
            self.on_event(f"the live score of rollout {score.episode_index} was not written ({error})")
            return
        self.written.append(score)
        said = "skipped" if score.skipped else " ".join(f"{c}={v:g}" for c, v in score.scores.items())
        self.on_event(f"rollout {score.episode_index}: {said}")
