"""Leader arms as the action source, engaged on each follower without a jump."""

from robot.errors import ConfigError
from robot.joints import JOINT_NAMES, Side, joint_key
from robot.loop_timer import Tick
from robot.rig import BimanualRig, Observation, split_action
from robot.safety.engage import Engager


class LeaderSource:
    """Followers copy the leaders; at start each follower ramps to its leader first (safety.engage)."""

    def __init__(self, rig: BimanualRig) -> None:
        if not rig.has_leaders:
            raise ConfigError(
                "teleoperation needs leader arms: the rig file has no leader ports"
                " (set ports.left_leader and ports.right_leader)"
            )
        self.engagers = {
            side: Engager(rig.follower(side).name, rig.safety, rig.guards[side].last_sent) for side in Side
        }
        self._period_s = 1.0 / 30.0
        self._last_deadline: float | None = None

    @property
    def engaged(self) -> bool:
        """Whether both followers follow their leaders directly."""
        return all(e.engaged for e in self.engagers.values())

    def action(self, observation: Observation, tick: Tick) -> dict[str, float]:
        """The leaders' positions, or a ramp toward them while a follower is not yet engaged."""
        dt = self._period_s if self._last_deadline is None else tick.deadline_s - self._last_deadline
        self._last_deadline = tick.deadline_s
        leaders = split_action(observation.leader_action())
        goals = {side: self.engagers[side].goal(leaders[side], dt) for side in Side}
        return {joint_key(side, j): goals[side][j] for side in Side for j in JOINT_NAMES}
