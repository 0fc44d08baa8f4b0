"""How well the followers track what they were sent: per-joint error, a step hook."""

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from robot.control_loop import Step
from robot.joint_values import JointValues
from robot.joints import BIMANUAL_KEYS, GRIPPER

GRIPPER_KEYS = tuple(k for k in BIMANUAL_KEYS if GRIPPER in k)


@dataclass(frozen=True)
class TrackingStats:
    """Follower position versus the goal it was sent one tick earlier (its command in flight).

    Ticks that started late (the host was busy) are left out and counted: a late tick lets the
    leaders run ahead of the followers, which says something about the machine, not the arms. So are
    ticks after a step that finished late (the host stalled between its read and its write): the goal
    then reached the followers only just before the next read, with no time to move.
    """

    ticks: int
    late_ticks_excluded: int
    mean_abs_deg: dict[str, float]
    max_abs_deg: dict[str, float]
    # The largest one-tick move of each goal over the same stretch, degrees: how fast the command
    # moved. A servo trails a moving goal by its lag (real SO-101s: ~4 frames at 30 fps), so the error
    # above is read against this.
    max_step_deg: dict[str, float] = field(default_factory=dict)

    @property
    def worst_joint(self) -> tuple[str, float]:
        """The body joint with the largest error, and that error in degrees."""
        key = max(self.max_abs_deg, key=self.max_abs_deg.__getitem__)
        return key, self.max_abs_deg[key]


class TrackingHook:
    """Collects tracking errors while `active()` (e.g. once the followers engaged the leaders)."""

    def __init__(
        self,
        skip_ticks: int = 0,
        late_tolerance_s: float = 0.008,
        step_budget_s: float = 0.015,
        active: Callable[[], bool] = lambda: True,
    ) -> None:
        """`step_budget_s`: how long after its start a step may finish (read, safety, write) and count."""
        self.late_tolerance_s = late_tolerance_s
        self.step_budget_s = step_budget_s
        self._late = 0
        self.skip_ticks = skip_ticks
        self.active = active
        self._previous_sent: JointValues | None = None
        self._errors: deque[np.ndarray] = deque()
        self._max_step = np.zeros(0)
        self._seen = 0
        self._keys = [k for k in BIMANUAL_KEYS if k not in GRIPPER_KEYS]
        self._body = np.array([k not in GRIPPER_KEYS for k in BIMANUAL_KEYS])
        self._previous_on_time = True

    def on_step(self, step: Step) -> None:
        """Compare this tick's observed followers with last tick's command."""
        state = step.observation.state().vector[self._body]
        sent = step.sent.vector[self._body]
        on_time = step.tick.skipped == 0 and step.tick.late_s <= self.late_tolerance_s
        if self._previous_sent is not None and self.active() and not step.stale_observation:
            self._seen += 1
            if self._seen > self.skip_ticks:
                previous = self._previous_sent.vector[self._body]
                moved = np.abs(sent - previous)
                self._max_step = np.maximum(self._max_step, moved) if self._max_step.size else moved
                if on_time and self._previous_on_time:
                    self._errors.append(state - previous)
                else:
                    self._late += 1
        self._previous_sent = step.sent
        # Hooks run once the goals are written: a step still running this long after its tick started
        # stalled somewhere, and its goals had less than a period to act before the next read.
        self._previous_on_time = on_time and time.monotonic() - step.tick.start_s <= self.step_budget_s

    def stats(self) -> TrackingStats:
        """Errors so far (body joints, degrees)."""
        if not self._errors:
            return TrackingStats(0, self._late, {}, {})
        errors = np.abs(np.stack(self._errors))
        return TrackingStats(
            ticks=len(errors),
            late_ticks_excluded=self._late,
            mean_abs_deg=dict(zip(self._keys, errors.mean(axis=0).tolist(), strict=True)),
            max_abs_deg=dict(zip(self._keys, errors.max(axis=0).tolist(), strict=True)),
            max_step_deg=dict(zip(self._keys, self._max_step.tolist(), strict=True)),
        )
