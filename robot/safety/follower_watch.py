"""The followers' watch: both watchdogs fed with their health polls, as one decision for the rig.

    polls (arm name -> fresh health, or None) -> each follower's Watchdog -> the most severe verdict
                                              -> each gripper's relief: loaded right now?

A REST verdict stays (the session ends: a later, calmer poll does not undo it); HOLD and OK follow
the polls. A follower without a fresh poll keeps its watchdog's last decision.

A status poll that misses its read deadline is such a follower too, a few times in a row
(`PollMisses`): the loop already rides out a few missed state reads, and one late reply to a
poll made every half second (a busy host, a USB hiccup) used to end the whole session. A motor
that stays silent for `MISSED_POLLS_BEFORE_STOP` polls in a row still stops it, with the error.
"""

import logging
import threading
from collections.abc import Callable, Mapping

from robot.arm import ArmHealth
from robot.errors import MotorTimeoutError
from robot.joints import Side
from robot.safety.config import SafetyConfig
from robot.safety.gripper_relief import GripperReliefs
from robot.safety.watchdog import Verdict, Watchdog, WatchdogDecision

logger = logging.getLogger(__name__)
MISSED_POLLS_BEFORE_STOP = 3  # status polls in a row a follower may miss (1.5 s at the 0.5 s default)


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


class PollMisses:
    """Counts each follower's status polls in a row that got no reply in time; raises past the bound."""

    def __init__(self) -> None:
        self.in_a_row: dict[str, int] = {}  # arm name -> polls missed in a row
        self.total = 0  # missed polls over the rig's life
        self._lock = threading.Lock()  # `total` is shared by the worker threads; `+=` is not atomic

    def poll(self, arm: str, poll: Callable[[], ArmHealth | None]) -> ArmHealth | None:
        """`poll()`'s health; None (no fresh poll) when it timed out fewer than MISSED_POLLS_BEFORE_STOP times in a row.

        Called from the rig's worker threads, one arm each: every arm has its own key.

        Raises:
            MotorTimeoutError: the arm missed MISSED_POLLS_BEFORE_STOP polls in a row (a silent motor).
        """
        try:
            health = poll()
        except MotorTimeoutError:
            with self._lock:
                missed = self.in_a_row[arm] = self.in_a_row.get(arm, 0) + 1
                self.total += 1
            if missed >= MISSED_POLLS_BEFORE_STOP:
                raise
            logger.warning(
                "%s: a status poll got no reply in time (%d in a row); its watchdog keeps its verdict", arm, missed
            )
            return None
        self.in_a_row[arm] = 0
        return health
