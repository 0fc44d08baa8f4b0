"""Keep policy comparisons inside what is possible: clipped intervals, no test where nothing varies.

A difference of two means of 0..1 scores lies in -1..1 (of two totals of K criteria, in -K..K), but a
Welch interval from a handful of episodes can run far outside it (-2.93..3.43 on a 0..1 criterion at
n = 2 + 2), so each interval is clipped to that range: clipped, not computed on a bounded scale, and
the report's method text says so. Where every episode of both policies has the same score there is
nothing to estimate or test: the difference keeps its method `no_variation` and the permutation
p-value (1 by construction) is dropped, and Holm's adjustment runs over the criteria that remain.
"""

from __future__ import annotations

from dataclasses import replace

from evaluation.report.comparison import Comparison, Difference
from evaluation.report.permutation import holm_adjust
from evaluation.report.stats import NO_VARIATION, clip_estimate


def bounded(comparison: Comparison, criteria: int) -> Comparison:
    """The comparison with intervals clipped to the possible differences and no p-value where nothing varies.

    Args:
        comparison: As computed by `comparison.compare`.
        criteria: Criteria per episode (a total lies in 0..criteria, each criterion in 0..1).
    """
    total = _bounded(comparison.total, float(criteria))
    per_criterion = [_bounded(d, 1.0) for d in comparison.criteria]
    adjusted = holm_adjust([d.test.p_value for d in per_criterion])
    return replace(
        comparison,
        total=total,
        criteria=tuple(replace(d, p_holm=p) for d, p in zip(per_criterion, adjusted, strict=True)),
    )


def _bounded(d: Difference, width: float) -> Difference:
    difference = clip_estimate(d.difference, -width, width)
    test = replace(d.test, p_value=None) if difference.method == NO_VARIATION else d.test
    return replace(d, difference=difference, test=test)
