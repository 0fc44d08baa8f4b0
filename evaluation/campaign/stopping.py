"""The stopping rule: end a two-policy campaign once the difference in mean total score clearly is not 0.

At a look (after a whole round, when every label has the same number of episodes planned), with the
per-episode totals (sum of the rubric's criteria) of the two policies: the difference first − second
with a Welch interval (`evaluation.report.stats.welch_difference`, the report's own statistics). The
rule stops when that interval excludes 0, once each policy has at least `min_episodes` scored
episodes; at the campaign's maximum it stops anyway.

Looking repeatedly inflates the false-stop rate: with five looks at a nominal 95 % interval, two
equal policies end "significant" far more often than 5 % of the time, because each look is another
chance for noise to cross the line. So by default each look uses a Bonferroni split over the planned
looks: with L looks, a (1 − 0.05 / L) interval; the chance that any look of an A/A campaign stops
stays at most 5 %. That is conservative (the looks are strongly correlated, so the real rate is
lower, and a real difference needs more episodes to show than with one look); a group-sequential
boundary (Pocock, O'Brien-Fleming) would spend the 5 % more efficiently but needs a spending plan
and tables we do not want to get subtly wrong. `adjust_for_looks=False` uses the nominal interval at
every look, and says so. Either way, an interval reported after an early stop overstates the
difference a little (a stop happens when noise and effect point the same way).

More than two policies: the rule is not defined (which pair decides?); the campaign refuses
--campaign.stop_when_significant with more than two and runs to its target, and so101-report compares
every pair.

Where both policies are each constant (say, every A scores 3 and every B 0), Welch gives no interval
(no spread within either): the rule does not stop on that, it waits for spread or the maximum.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from evaluation.campaign.order import Round
from evaluation.report.stats import CONFIDENCE, Estimate, welch_difference

DEFAULT_MIN_EPISODES = 4  # fewer than this per policy: a Welch interval is too unstable to stop on


class Verdict(enum.Enum):
    """What the campaign does after a look."""

    CONTINUE = "continue"
    SIGNIFICANT = "stop: interval excludes 0"
    MAXIMUM = "stop: maximum reached"

    @property
    def stops(self) -> bool:
        """Whether the campaign ends."""
        return self is not Verdict.CONTINUE


@dataclass(frozen=True)
class Decision:
    """The rule's answer at one look."""

    verdict: Verdict
    difference: Estimate  # first − second, at `confidence` (bounds None when there is no interval yet)
    confidence: float  # level of this look's interval, e.g. 0.99 for a 95 % split over 5 looks
    reason: str  # one line, in words, without naming which policy is ahead

    def to_dict(self) -> dict[str, object]:
        """Plain data for campaign.json."""
        return {
            "verdict": self.verdict.value,
            "difference": self.difference.to_dict(),
            "confidence": self.confidence,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class StoppingRule:
    """When a two-policy campaign may stop before its maximum."""

    planned_looks: int  # looks the campaign can take (whole rounds from min_episodes to the maximum)
    min_episodes: int = DEFAULT_MIN_EPISODES  # scored episodes each policy needs before the rule may stop
    adjust_for_looks: bool = True  # Bonferroni split of the 5 % over the planned looks (see the module docstring)
    bounds: tuple[float, float] | None = None  # scale of one total, e.g. (0, 3): intervals are clipped to it

    def __post_init__(self) -> None:
        """Validate the fields."""
        if self.planned_looks < 1 or self.min_episodes < 2:
            raise ValueError(
                f"planned_looks={self.planned_looks} (>= 1) and min_episodes={self.min_episodes} (>= 2: a Welch "
                "interval needs two episodes a side)"
            )

    @property
    def confidence(self) -> float:
        """Level of each look's interval."""
        alpha = 1 - CONFIDENCE
        return 1 - alpha / self.planned_looks if self.adjust_for_looks else CONFIDENCE

    def decide(self, first: Sequence[float], second: Sequence[float], *, at_maximum: bool) -> Decision:
        """The verdict after a whole round, from each policy's scored per-episode totals.

        `at_maximum`: the plan is exhausted, so the campaign ends whatever the interval says.
        """
        difference = welch_difference(first, second, self.confidence, self.bounds)
        level = f"{self.confidence * 100:.4g} %"
        n = min(len(first), len(second))
        excludes = (
            difference.low is not None and difference.high is not None and (difference.low > 0 or difference.high < 0)
        )
        if excludes and n >= self.min_episodes:
            return Decision(
                Verdict.SIGNIFICANT, difference, self.confidence, f"{level} interval, {n}+ scored episodes per policy"
            )
        if at_maximum:
            return Decision(Verdict.MAXIMUM, difference, self.confidence, "every planned episode is done")
        if n < self.min_episodes:
            why = f"{n} scored episode(s) of a policy; the rule may stop from {self.min_episodes}"
        elif difference.low is None:
            why = f"no interval yet ({difference.method}): the scores do not vary within each policy"
        else:
            why = f"the {level} interval of the difference still includes 0"
        return Decision(Verdict.CONTINUE, difference, self.confidence, why)


def planned_looks(rounds: Sequence[Round], labels: Sequence[str], min_episodes: int) -> int:
    """Looks a campaign of these rounds can take: whole rounds after which every label has `min_episodes` planned.

    At least 1 (the last round is always a look: the maximum).
    """
    totals = dict.fromkeys(labels, 0)
    looks = 0
    for r in rounds:
        for label in totals:
            totals[label] += r.episodes(label)
        looks += min(totals.values()) >= min_episodes
    return max(looks, 1)
