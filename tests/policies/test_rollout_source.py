"""RolloutSource: the policy drives while an episode is due or running, the arms hold otherwise."""

from policies.rollout import RolloutSource
from tests.support.observations import Driver, observation, tick


def test_the_hold_after_an_episode_is_a_transition_and_holds_the_policys_last_goal():
    in_charge = {0: False, 1: True, 2: True, 3: False, 4: False}
    transitions: list[str] = []
    driver = Driver()
    source = RolloutSource(driver, lambda now: in_charge[round(now * 30)], on_transition=transitions.append)
    assert source.action(observation(), tick(0)) == observation().state()  # before: hold where the arms are
    assert not source.engaged
    assert set(source.action(observation(), tick(1)).vector) == {99.0}
    assert source.engaged
    source.action(observation(), tick(2))
    assert transitions == []  # taking charge is the driver's to signal (with its first action)
    held = source.action(observation(offset=5.0), tick(3))
    assert set(held.vector) == {99.0}  # the last goal, not the arms' new pose
    assert transitions == ["the policy hands over to a hold"]
    assert driver.resets == 2  # at taking charge and at handing over
    source.action(observation(), tick(4))
    assert len(transitions) == 1
