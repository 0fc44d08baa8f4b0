"""RolloutSource: the policy drives while an episode is due or running, the arms hold otherwise."""

import numpy as np

from policies.rollout import RolloutSource, StartAt
from robot.joint_values import JointValues
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


def test_with_a_start_pose_the_arms_go_there_first_and_back_between_episodes():
    in_charge = {0: False, 1: True, 2: True, 3: True, 4: False, 5: True}
    reached = {"now": False}
    start = StartAt(JointValues(np.full((2, 6), 7.0)), reached=lambda: reached["now"])
    transitions: list[str] = []
    driver = Driver()
    source = RolloutSource(
        driver, lambda now: in_charge[round(now * 30)], on_transition=transitions.append, start=start
    )
    assert source.action(observation(), tick(0)) == start.pose  # not where the arms are: the start pose
    assert source.action(observation(), tick(1)) == start.pose  # an episode is due, the arms not there yet
    assert not driver.acted
    assert not source.engaged  # so the session does not start recording
    reached["now"] = True
    assert set(source.action(observation(), tick(2)).vector) == {99.0}  # arrived: the policy takes charge
    reached["now"] = False  # the policy's own moves are transitions too: no reason to stop it
    assert set(source.action(observation(), tick(3)).vector) == {99.0}
    assert source.action(observation(offset=5.0), tick(4)) == start.pose  # back to the start, not the last goal
    assert transitions == ["the policy hands over to a hold"]
    assert source.action(observation(), tick(5)) == start.pose  # the next episode waits for the arms again
    assert driver.resets == 2


def test_a_correction_pause_resumes_the_policy_from_where_the_person_left_it():
    reached = {"now": True}
    start = StartAt(JointValues(np.full((2, 6), 7.0)), reached=lambda: reached["now"])
    source = RolloutSource(Driver(), lambda now: now >= 1 / 30, start=start)
    assert source.action(observation(), tick(0)) == start.pose
    assert set(source.action(observation(), tick(1)).vector) == {99.0}  # there: the episode runs
    reached["now"] = False  # the person's goals ramp: far from the start pose
    source.pause(observation(offset=3.0).state())
    assert set(source.action(observation(), tick(2)).vector) == {99.0}  # no trip back to the start pose


def test_an_episode_a_person_ended_goes_back_to_the_start_pose_too():
    reached = {"now": True}
    start = StartAt(JointValues(np.full((2, 6), 7.0)), reached=lambda: reached["now"])
    in_charge = {0: True, 1: False, 2: True, 3: True}
    source = RolloutSource(Driver(), lambda now: in_charge[round(now * 30)], start=start)
    assert set(source.action(observation(), tick(0)).vector) == {99.0}
    left_at = observation(offset=3.0).state()
    source.between_episodes(left_at)  # the person had the arms when the episode ended
    assert source.action(observation(), tick(1)) == start.pose
    reached["now"] = False
    assert source.action(observation(), tick(2)) == start.pose  # the next rollout waits for the arms
    plain = RolloutSource(Driver(), lambda now: False)
    plain.between_episodes(left_at)
    assert plain.action(observation(), tick(3)) == left_at  # no start pose: hold where the person left them
