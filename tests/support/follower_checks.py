"""How the virtual followers were left after a command ended: released at rest, or holding.

start = followers(client)                 # before the command runs
...                                       # the command runs and is stopped
assert_released_at_rest(client, start)    # on_exit=rest_then_release (the default)
assert_holding(client)                    # on_exit=hold
"""

from robot.virtual.client import VirtualRigClient

FOLLOWERS = ("left_follower", "right_follower")
REST_STEPS = 40  # ~3.5 degrees: back where they started (the rest pose), within the rest tolerance and settling


def followers(client: VirtualRigClient) -> dict[str, list[dict]]:
    """The followers' motor states (torque, present position, ...), per arm, joint order."""
    state = client.state()
    return {arm: state[arm] for arm in FOLLOWERS}


def assert_released_at_rest(client: VirtualRigClient, start: dict[str, list[dict]]) -> None:
    """rest_then_release: every follower motor torque-free, each body joint back where it started."""
    now = followers(client)
    for arm in FOLLOWERS:
        assert not any(m["torque_enabled"] for m in now[arm]), (arm, now[arm])
        for before, after in zip(start[arm][:5], now[arm][:5], strict=True):  # the gripper may have squeezed
            assert abs(after["present_position"] - before["present_position"]) <= REST_STEPS, (arm, before, after)


def assert_holding(client: VirtualRigClient) -> None:
    """hold: every follower motor keeps torque, at the goal it was last sent."""
    now = followers(client)
    for arm in FOLLOWERS:
        assert all(m["torque_enabled"] for m in now[arm][:5]), (arm, now[arm])
