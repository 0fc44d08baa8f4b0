"""The followers' watch: both watchdogs fed with their health polls, as one decision for the rig.

    polls (arm name -> fresh health, or None) -> each follower's Watchdog -> the most severe verdict
                                              -> each gripper's relief: loaded right now?

A REST verdict stays (the session ends: a later, calmer poll does not undo it); HOLD and OK follow
the polls. A follower without a fresh poll keeps its watchdog's last decision.
"""

from collections.abc import Mapping

from robot.arm import ArmHealth
from robot.joints import Side
from robot.safety.config import SafetyConfig
from robot.safety.gripper_relief import GripperReliefs
from robot.safety.watchdog import Verdict, Watchdog, WatchdogDecision


class FollowerWatch:
    """Both followers' watchdogs and their combined decision. One thread (the rig's)."""

    def __init__(self, arms: Mapping[Side, str], config: SafetyConfig) -> None:
        """`arms`: each follower's name, the key of its health in the polls."""
        self.watchdogs = {side: Watchdog(name, config) for side, name in arms.items()}
        self.decision = WatchdogDecision(Verdict.OK)

    def update(self, polls: Mapping[str, ArmHealth | None], reliefs: GripperReliefs) -> WatchdogDecision:
        """Judge this round of health polls; returns (and keeps) the decision for the followers."""
        latched = self.decision if self.decision.verdict is Verdict.REST else WatchdogDecision(Verdict.OK)
        decisions = [latched]
        for side, watchdog in self.watchdogs.items():
            health = polls.get(watchdog.arm)
            decision = watchdog.update(health) if health is not None else watchdog.decision
            if health is not None:  # a fresh poll: squeezing means loaded *and* still, right now
                reliefs.sides[side].poll(decision.relieve_gripper)
            decisions.append(decision)
        self.decision = max(decisions, key=lambda d: d.verdict)
        return self.decision
