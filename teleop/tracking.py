"""How well the followers track what they were sent: per-joint error, a step hook."""

from collections import deque
from dataclasses import dataclass

import numpy as np

from robot.control_loop import Step
from robot.joints import BIMANUAL_KEYS

GRIPPER_KEYS = tuple(k for k in BIMANUAL_KEYS if "gripper" in k)


@dataclass(frozen=True)
class TrackingStats:
    """Follower position versus the goal it was sent one tick earlier (its command in flight)."""

    ticks: int
    mean_abs_deg: dict[str, float]
    max_abs_deg: dict[str, float]

    @property
    def worst_joint(self) -> tuple[str, float]:
        """The body joint with the largest error, and that error in degrees."""
        key = max(self.max_abs_deg, key=self.max_abs_deg.__getitem__)
        return key, self.max_abs_deg[key]


class TrackingHook:
    """Collects tracking errors once `active` (e.g. after the followers engaged)."""

    def __init__(self, skip_ticks: int = 0) -> None:
        self.skip_ticks = skip_ticks
        self.active = True
        self._previous_sent: dict[str, float] | None = None
        self._errors: deque[np.ndarray] = deque()
        self._seen = 0
        self._keys = [k for k in BIMANUAL_KEYS if k not in GRIPPER_KEYS]

    def on_step(self, step: Step) -> None:
        """Compare this tick's observed followers with last tick's command."""
        state = step.observation.state()
        if self._previous_sent is not None and self.active and not step.stale_observation:
            self._seen += 1
            if self._seen > self.skip_ticks:
                self._errors.append(np.array([state[k] - self._previous_sent[k] for k in self._keys]))
        self._previous_sent = dict(step.sent)

    def stats(self) -> TrackingStats:
        """Errors so far (body joints, degrees)."""
        if not self._errors:
            return TrackingStats(0, {}, {})
        errors = np.abs(np.stack(self._errors))
        return TrackingStats(
            ticks=len(errors),
            mean_abs_deg=dict(zip(self._keys, errors.mean(axis=0).tolist(), strict=True)),
            max_abs_deg=dict(zip(self._keys, errors.max(axis=0).tolist(), strict=True)),
        )
