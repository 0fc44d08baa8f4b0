"""Leader arms as the action source; the rig's transition ramp engages each follower without a jump."""

from robot.errors import ConfigError
from robot.joint_values import JointValues
from robot.loop_timer import Tick
from robot.rig import BimanualRig, Observation


class LeaderSource:
    """Followers copy the leaders.

    At start the rig's guards are in their connect transition: each follower ramps to its leader at
    `safety.ramp_speed_deg_s` and follows it directly once it got there ("engaged"). Engagement is
    the session's start, once: a later transition (a hold ending) ramps too, but does not un-engage.
    """

    def __init__(self, rig: BimanualRig) -> None:
        if not rig.has_leaders:
            raise ConfigError(
                "teleoperation needs leader arms: the rig file has no leader ports"
                " (set ports.left_leader and ports.right_leader)"
            )
        self.rig = rig
        self._engaged = False

    @property
    def engaged(self) -> bool:
        """Whether both followers have reached their leaders once (the ramp of the start is over)."""
        if not self._engaged and self.rig.guards and not self.rig.in_transition:
            self._engaged = True
        return self._engaged

    def action(self, observation: Observation, tick: Tick) -> JointValues:
        """The leaders' positions (the rig's safety layer ramps to them while a transition lasts)."""
        return observation.leader_action()

    def step_facts(self, step: object) -> dict[str, float]:
        """No per-frame facts beyond the recording's own (teleop/session_links.py's SessionSource)."""
        return {}

    def on_key(self, key: object) -> None:
        """No keys of its own."""

    def episode_notes(self) -> dict[str, object]:
        """Nothing to add to a quality card."""
        return {}
