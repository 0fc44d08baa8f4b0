"""Interval estimates for small samples: t and BCa intervals of a mean, Wilson intervals of a rate, Welch differences.

Why these (docs/judge-research.md §2.3): with 7-10 episodes per policy the t-interval covered a
nominal 95 % in 90-93 % of simulated datasets, BCa in 88-91 %, the plain percentile bootstrap only in
81-88 %. So the mean total reward is reported with the t-interval (primary) and BCa beside it, never
the percentile bootstrap; rates get Wilson intervals (closer to nominal than Wald, narrower than
Clopper-Pearson). Every estimate carries its n: an interval from 7 episodes is wide, and says so.

Claims stay inside what is possible: a t or Welch interval is clipped to the range its quantity can
take (a criterion mean to 0..1, a difference of two such means to -1..1; `clipped` says it was), and
where every observation is equal there is no spread to build an interval from, so the estimate says
"no variation" (method `no_variation`, bounds None) instead of a zero-width interval.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats

CONFIDENCE = 0.95  # level of every interval in the report
NO_VARIATION = "no_variation"  # method of an estimate whose observations are all equal (no interval)
NO_VARIATION_WITHIN = "no_variation_within"  # a difference of two groups that are each constant (no interval)


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its interval (bounds None when n is too small to give one)."""

    value: float | None  # the estimate (None when n == 0)
    low: float | None  # lower bound of the interval
    high: float | None  # upper bound of the interval
    n: int  # observations behind it
    method: str  # "t", "bca", "wilson", "welch", "none", NO_VARIATION or NO_VARIATION_WITHIN
    clipped: bool = False  # a bound was cut back to the range the quantity can take

    @property
    def no_variation(self) -> bool:
        """Whether the observations had no spread, so there is no interval (see the module docstring)."""
        return self.method in (NO_VARIATION, NO_VARIATION_WITHIN)

    def to_dict(self) -> dict[str, float | int | str | bool | None]:
        """Plain data for the JSON output."""
        return {
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "n": self.n,
            "method": self.method,
            "clipped": self.clipped,
        }


@dataclass(frozen=True)
class Rate:
    """A success count and its rate with a Wilson interval."""

    successes: int  # episodes (or labels) that met the bar
    estimate: Estimate  # rate successes / n with its Wilson interval

    def to_dict(self) -> dict[str, object]:
        """Plain data for the JSON output."""
        return {"successes": self.successes, **self.estimate.to_dict()}


def _clean(values: Sequence[float]) -> np.ndarray:
    return np.asarray([v for v in values if v is not None], dtype=float)


def clip_estimate(e: Estimate, low: float, high: float) -> Estimate:
    """The estimate with its bounds cut back to [low, high] (`clipped` set when a bound moved)."""
    if e.low is None or e.high is None or (low <= e.low and e.high <= high):
        return e
    return replace(e, low=min(max(low, e.low), high), high=max(min(high, e.high), low), clipped=True)


def mean_t_interval(
    values: Sequence[float], confidence: float = CONFIDENCE, bounds: tuple[float, float] | None = None
) -> Estimate:
    """Mean with a Student-t interval: mean ± t(1-α/2, n-1) · s/√n, clipped to `bounds` (the score scale) if given.

    With n == 1 there is no spread estimate, so the bounds are None; with zero spread there is no
    interval either (method NO_VARIATION).
    """
    x = _clean(values)
    n = len(x)
    if n == 0:
        return Estimate(None, None, None, 0, "none")
    mean = float(x.mean())
    if n == 1:
        return Estimate(mean, None, None, 1, "none")
    if np.all(x == x[0]):
        return Estimate(mean, None, None, n, NO_VARIATION)
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1) * x.std(ddof=1) / math.sqrt(n))
    e = Estimate(mean, mean - half, mean + half, n, "t")
    return e if bounds is None else clip_estimate(e, *bounds)


def mean_bca_interval(
    values: Sequence[float], seed: int, n_resamples: int = 9999, confidence: float = CONFIDENCE
) -> Estimate:
    """Mean with a bias-corrected and accelerated bootstrap interval (scipy's BCa, seeded, so repeatable).

    BCa needs spread and at least two distinct values; otherwise the bounds are None (n < 2, or all
    values equal: method NO_VARIATION). A bootstrap mean never leaves the range of the data, so it
    needs no clipping.
    """
    x = _clean(values)
    n = len(x)
    if n == 0:
        return Estimate(None, None, None, 0, "none")
    mean = float(x.mean())
    if n < 2:
        return Estimate(mean, None, None, n, "none")
    if np.all(x == x[0]):
        return Estimate(mean, None, None, n, NO_VARIATION)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on very discrete data; the bounds are still defined
        result = stats.bootstrap(
            (x,),
            np.mean,
            n_resamples=n_resamples,
            confidence_level=confidence,
            method="BCa",
            rng=np.random.default_rng(seed),
        )
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    if not (math.isfinite(low) and math.isfinite(high)):
        return Estimate(mean, None, None, n, "none")
    return Estimate(mean, low, high, n, "bca")


def wilson_interval(successes: int, n: int, confidence: float = CONFIDENCE) -> Rate:
    """Rate successes/n with the Wilson score interval.

    centre = (p + z²/2n) / (1 + z²/n),  half = z/(1 + z²/n) · √(p(1-p)/n + z²/4n²).

    Raises:
        ValueError: successes is outside 0..n.
    """
    if not 0 <= successes <= n:
        raise ValueError(f"successes={successes} must lie in 0..n={n}")
    if n == 0:
        return Rate(0, Estimate(None, None, None, 0, "none"))
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    low = 0.0 if successes == 0 else max(0.0, centre - half)  # exact ends: rounding must not leave p outside
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Rate(successes, Estimate(p, low, high, n, "wilson"))


def welch_difference(
    a: Sequence[float], b: Sequence[float], confidence: float = CONFIDENCE, bounds: tuple[float, float] | None = None
) -> Estimate:
    """Difference of means a − b with a Welch interval (unequal variances, Welch-Satterthwaite df).

    Needs two observations on each side. `bounds` is the scale of one observation (e.g. 0..1); the
    interval is then clipped to the differences that scale allows (-1..1). With every observation
    equal the method is NO_VARIATION; with each side constant but different, NO_VARIATION_WITHIN
    (no interval either way). `n` is the total number of observations.
    """
    x, y = _clean(a), _clean(b)
    n = len(x) + len(y)
    if len(x) == 0 or len(y) == 0:
        return Estimate(None, None, None, n, "none")
    diff = float(x.mean() - y.mean())
    if n > 2 and np.all(np.concatenate([x, y]) == x[0]):
        return Estimate(diff, None, None, n, NO_VARIATION)
    if len(x) < 2 or len(y) < 2:
        return Estimate(diff, None, None, n, "none")
    vx, vy = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    se2 = vx + vy
    if se2 == 0:
        return Estimate(diff, None, None, n, NO_VARIATION_WITHIN)
    df = se2**2 / (vx**2 / (len(x) - 1) + vy**2 / (len(y) - 1))
    half = float(stats.t.ppf(0.5 + confidence / 2, df) * math.sqrt(se2))
    e = Estimate(diff, diff - half, diff + half, n, "welch")
    if bounds is None:
        return e
    width = bounds[1] - bounds[0]
    return clip_estimate(e, -width, width)
