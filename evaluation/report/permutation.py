"""Two-sample permutation test on the difference of means, and Holm's adjustment across several tests.

The test is two-sided: p = P(|mean(A*) − mean(B*)| ≥ |observed difference|) over relabellings of the
pooled episodes. It enumerates every split exactly when there are at most `max_exact` of them
(C(20, 10) = 184,756 covers two policies of 10 episodes), else draws `n_resamples` random splits
from a seeded generator and reports (hits + 1) / (n_resamples + 1), which never reads as zero.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MAX_EXACT = 200_000  # enumerate every split up to this many, else Monte Carlo
N_RESAMPLES = 20_000  # random splits of the Monte Carlo test
_CHUNK = 20_000  # splits evaluated per vectorised step (bounds memory)


@dataclass(frozen=True)
class PermutationResult:
    """Outcome of a permutation test."""

    p_value: float | None  # two-sided p (None when a side has no observation)
    exact: bool  # True: every split enumerated; False: Monte Carlo
    permutations: int  # splits evaluated
    observed: float | None  # mean(a) − mean(b)

    def to_dict(self) -> dict[str, object]:
        """Plain data for the JSON output."""
        return {
            "p_value": self.p_value,
            "exact": self.exact,
            "permutations": self.permutations,
            "observed": self.observed,
        }


def permutation_test(
    a: Sequence[float],
    b: Sequence[float],
    *,
    seed: int = 0,
    max_exact: int = MAX_EXACT,
    n_resamples: int = N_RESAMPLES,
) -> PermutationResult:
    """Two-sided permutation test of mean(a) − mean(b)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(x) == 0 or len(y) == 0:
        return PermutationResult(None, True, 0, None)
    pooled = np.concatenate([x, y])
    n, k = len(pooled), len(x)
    total = pooled.sum()
    observed = float(x.mean() - y.mean())
    threshold = abs(observed) * (1 - 1e-9) - 1e-12  # ties count as "as extreme" despite float rounding
    count = math.comb(n, k)
    if count <= max_exact:
        hits = 0
        combos = itertools.combinations(range(n), k)
        while chunk := list(itertools.islice(combos, _CHUNK)):
            sums = pooled[np.asarray(chunk)].sum(axis=1)
            hits += int(np.count_nonzero(_abs_diffs(sums, total, k, n) >= threshold))
        return PermutationResult(hits / count, True, count, observed)
    rng = np.random.default_rng(seed)
    hits, done = 0, 0
    while done < n_resamples:
        size = min(_CHUNK, n_resamples - done)
        order = rng.permuted(np.broadcast_to(np.arange(n), (size, n)), axis=1)
        sums = pooled[order[:, :k]].sum(axis=1)
        hits += int(np.count_nonzero(_abs_diffs(sums, total, k, n) >= threshold))
        done += size
    return PermutationResult((hits + 1) / (n_resamples + 1), False, n_resamples, observed)


def _abs_diffs(sums_a: np.ndarray, total: float, k: int, n: int) -> np.ndarray:
    return np.abs(sums_a / k - (total - sums_a) / (n - k))


def holm_adjust(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment (controls the family-wise error); None entries stay None."""
    indexed = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(indexed)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(indexed):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted
