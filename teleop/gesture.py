"""The hands-on-the-leaders gesture: both leader grippers squeezed shut, arms still, for a second.

With both hands on the leaders a person cannot reach the keyboard; closing both grippers and holding
still starts (or ends) an episode. Stillness is required because a bimanual grasp also closes both
grippers, but with the arms moving. Fires once per squeeze: both grippers must open again before
the next one counts.
"""

from dataclasses import dataclass

from robot.config_checks import reject_non_finite
from robot.joint_values import JointValues
from robot.joints import BODY_JOINTS, GRIPPER, Side


@dataclass(frozen=True)
class GestureConfig:
    """When a squeeze of both leader grippers counts as the gesture."""

    enabled: bool = True  # off: episodes are only started and ended by time and keys
    closed_below_percent: float = 8.0  # a gripper reading below this is squeezed shut, percent
    open_above_percent: float = 20.0  # both must open past this before the next gesture, percent
    hold_s: float = 1.0  # how long the squeeze must last, seconds
    still_below_deg_s: float = 15.0  # every other leader joint slower than this, degrees per second

    def __post_init__(self) -> None:
        reject_non_finite(self, "gesture")


class GestureDetector:
    """Fed the leaders' positions every tick; says when the gesture completes."""

    def __init__(self, config: GestureConfig, *, armed: bool = True) -> None:
        """A detector; with `armed=False` both grippers must be seen open before a squeeze counts.

        (Leaders resting with their grippers closed must not fire a rollout's take-over.)
        """
        self.config = config
        self._since: float | None = None
        self._armed = armed
        self._previous: tuple[float, JointValues] | None = None

    def update(self, leaders: JointValues, t_s: float) -> bool:
        """True exactly once when a squeeze has been held for `hold_s`."""
        config = self.config
        previous, self._previous = self._previous, (t_s, leaders)
        if not config.enabled:
            return False
        grippers = [leaders[side, GRIPPER] for side in Side]
        if not self._armed:
            if all(g > config.open_above_percent for g in grippers):
                self._armed = True
            return False
        still = True
        if previous is not None and t_s > previous[0]:
            dt = t_s - previous[0]
            speeds = [abs(leaders[side, j] - previous[1][side, j]) / dt for side in Side for j in BODY_JOINTS]
            still = max(speeds) < config.still_below_deg_s
        if all(g < config.closed_below_percent for g in grippers) and still:
            self._since = t_s if self._since is None else self._since
            if t_s - self._since >= config.hold_s:
                self._since = None
                self._armed = False
                return True
        else:
            self._since = None
        return False
