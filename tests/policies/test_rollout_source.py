"""RolloutSource: the policy drives while an episode is due or running, the arms hold otherwise."""

from collections.abc import Mapping

from policies.rollout import RolloutSource
from tests.support.observations import observation, tick


class Driver:
    """A policy that always asks for the same far goal once reset."""

    def __init__(self) -> None:
        self.resets = 0
        self.acted = False

    def action(self, observation, tick) -> Mapping[str, float]:
        self.acted = True
        return dict.fromkeys(observation.state(), 99.0)

    def reset(self) -> None:
        self.resets += 1
        self.acted = False

    @property
    def has_acted(self) -> bool:
        return self.acted

    def facts(self) -> Mapping[str, float]:
        return {}


def test_the_hold_after_an_episode_is_a_transition_and_holds_the_policys_last_goal():
    in_charge = {0: False, 1: True, 2: True, 3: False, 4: False}
    transitions: list[str] = []
    driver = Driver()
    source = RolloutSource(driver, lambda now: in_charge[round(now * 30)], on_transition=transitions.append)
    assert source.action(observation(), tick(0)) == observation().state()  # before: hold where the arms are
    assert not source.engaged
    assert set(source.action(observation(), tick(1)).values()) == {99.0}
    assert source.engaged
    source.action(observation(), tick(2))
    assert transitions == []  # taking charge is the driver's to signal (with its first action)
    held = source.action(observation(offset=5.0), tick(3))
    assert set(held.values()) == {99.0}  # the last goal, not the arms' new pose
    assert transitions == ["the policy hands over to a hold"]
    assert driver.resets == 2  # at taking charge and at handing over
    source.action(observation(), tick(4))
    assert len(transitions) == 1
