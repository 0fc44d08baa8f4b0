"""One episode's save on its own thread, and the record of an episode whose save failed.

    control thread (each tick)                      save thread
    --------------------------                      -----------
    BackgroundSave(card, save) ───────────────────> save()  (writer.save_episode: seconds, at most
    ...                                              the writer's `longest_save_s`)
    ended()? ── no: not saved yet (never counted)    returns: durable / raises: kept as `error`
             └─ yes: read `error` (the join makes the thread's writes visible) and count it once

An episode counts as saved only once its save has returned; a save that raised, or that is still
running when the session gives up waiting, leaves an UnsavedEpisode instead.
"""

import threading
from collections.abc import Callable
from dataclasses import dataclass

from teleop.quality import QualityCard


@dataclass(frozen=True)
class UnsavedEpisode:
    """An episode of this run that is not in the dataset, and why."""

    index: int  # its episode index (a new attempt, if any, gets the same one)
    reason: str  # the writer's error, or why the save's end was not seen


class BackgroundSave:
    """A writer's save of one episode, running on its own thread; its outcome is read once it has ended."""

    def __init__(self, card: QualityCard, save: Callable[[], object]) -> None:
        """Start `save` at once on a new thread (`card`: the episode's quality card, for its index)."""
        self.card = card
        self.error: BaseException | None = None  # what the save raised; read only once `ended()`
        self._thread = threading.Thread(target=self._run, args=(save,), name=f"save-episode-{card.episode}")
        self._thread.start()

    def _run(self, save: Callable[[], object]) -> None:
        try:
            save()
        except BaseException as error:  # reported on the control thread, never lost with the thread
            self.error = error

    def ended(self, timeout_s: float = 0.0) -> bool:
        """Whether the save has returned or raised, waiting up to `timeout_s` seconds for it (blocking)."""
        self._thread.join(timeout_s)
        return not self._thread.is_alive()
