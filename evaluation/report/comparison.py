"""Differences between policies: mean total and per-criterion means, each with a Welch interval and a permutation test.

Every pair (first, second) in report order, in both views, difference = first − second. Episodes of
two policies are independent samples (different rollouts), so the tests are unpaired. The total is
the primary comparison (its p-value is not adjusted); the per-criterion p-values are also given
Holm-adjusted across the criteria of the pair (docs/judge-research.md §2.4).
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluation.report.config import StatsConfig
from evaluation.report.permutation import PermutationResult, holm_adjust, permutation_test
from evaluation.report.scores import PolicyScores, View
from evaluation.report.stats import Estimate, welch_difference


@dataclass(frozen=True)
class Difference:
    """One compared quantity."""

    label: str  # "total" or a criterion id
    difference: Estimate  # first − second with a Welch interval
    test: PermutationResult  # two-sided permutation test
    p_holm: float | None  # Holm-adjusted p across the criteria (None for the total)

    def to_dict(self) -> dict[str, object]:
        """Plain data for the JSON output."""
        return {
            "label": self.label,
            "difference": self.difference.to_dict(),
            "permutation": self.test.to_dict(),
            "p_holm": self.p_holm,
        }


@dataclass(frozen=True)
class Comparison:
    """Two policies compared in one view."""

    first: str  # policy label
    second: str  # policy label
    view: View  # judge-only or effective scores
    total: Difference  # mean total reward
    criteria: tuple[Difference, ...]  # per-criterion means, rubric order

    def to_dict(self) -> dict[str, object]:
        """Plain data for the JSON output."""
        return {
            "first": self.first,
            "second": self.second,
            "view": self.view.value,
            "total": self.total.to_dict(),
            "criteria": [c.to_dict() for c in self.criteria],
        }


def compare(first: PolicyScores, second: PolicyScores, view: View, options: StatsConfig) -> Comparison:
    """Compare two policies judged against the same criteria."""
    total = _difference("total", first.totals(view), second.totals(view), options, None)
    raw = [(cid, first.values(cid, view), second.values(cid, view)) for cid in first.criterion_ids]
    tests = [_test(a, b, options) for _, a, b in raw]
    adjusted = holm_adjust([t.p_value for t in tests])
    criteria = tuple(
        Difference(cid, welch_difference(a, b), test, p)
        for (cid, a, b), test, p in zip(raw, tests, adjusted, strict=True)
    )
    return Comparison(first.name, second.name, view, total, criteria)


def compare_all(policies: list[PolicyScores], options: StatsConfig) -> list[Comparison]:
    """Every pair in order, judge view then effective view."""
    out = []
    for i, a in enumerate(policies):
        for b in policies[i + 1 :]:
            out.extend(compare(a, b, view, options) for view in View)
    return out


def _test(a: list[float], b: list[float], options: StatsConfig) -> PermutationResult:
    return permutation_test(
        a, b, seed=options.seed, max_exact=options.max_exact_permutations, n_resamples=options.permutation_resamples
    )


def _difference(label: str, a: list[float], b: list[float], options: StatsConfig, p_holm: float | None) -> Difference:
    return Difference(label, welch_difference(a, b), _test(a, b, options), p_holm)
