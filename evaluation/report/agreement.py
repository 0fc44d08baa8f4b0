"""Judge-versus-human agreement on the ordinal 0 / 0.5 / 1 scale: accuracy, weighted kappa, MAE and bias.

Kappa uses quadratic weights, w_ij = ((i − j) / (k − 1))², as docs/judge-research.md §2.2 and §5.5
recommend for ordinal labels: a 0-versus-1 disagreement costs four times a half-step one. Bias is
mean(judge − human), so a judge that under-scores has a negative bias. Kappa is undefined (None) when
both raters put every label in the same single level (no disagreement is possible by chance).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

LEVELS: tuple[float, ...] = (0.0, 0.5, 1.0)  # the ordinal score levels, lowest first


@dataclass(frozen=True)
class Agreement:
    """Agreement of paired judge and human labels of one criterion (or of the total)."""

    label: str  # criterion id, or "total"
    n: int  # paired labels
    accuracy: float | None  # fraction of identical labels
    kappa: float | None  # quadratic-weighted Cohen's kappa (None for the total or when undefined)
    mae: float | None  # mean |judge − human|
    bias: float | None  # mean (judge − human); negative: the judge scores lower than people
    confusion: tuple[tuple[int, ...], ...]  # counts [judge level][human level] (empty for the total)

    def to_dict(self) -> dict[str, object]:
        """Plain data for the JSON output."""
        return {
            "label": self.label,
            "n": self.n,
            "accuracy": self.accuracy,
            "kappa_quadratic": self.kappa,
            "mae": self.mae,
            "bias": self.bias,
            "confusion_judge_by_human": [list(r) for r in self.confusion],
            "levels": list(LEVELS) if self.confusion else [],
        }


def level_index(value: float, levels: Sequence[float] = LEVELS) -> int:
    """Index of a score among the levels.

    Raises:
        ValueError: The value is not one of the levels.
    """
    for i, level in enumerate(levels):
        if abs(value - level) < 1e-9:
            return i
    raise ValueError(f"score {value!r} is not one of the levels {list(levels)}")


def confusion_matrix(judge: Sequence[float], human: Sequence[float], levels: Sequence[float] = LEVELS) -> np.ndarray:
    """Counts of (judge level, human level) pairs, shape (k, k)."""
    k = len(levels)
    matrix = np.zeros((k, k), dtype=int)
    for j, h in zip(judge, human, strict=True):
        matrix[level_index(j, levels), level_index(h, levels)] += 1
    return matrix


def weighted_kappa(matrix: np.ndarray, weights: str = "quadratic") -> float | None:
    """Cohen's kappa of a confusion matrix with "quadratic", "linear" or "none" (unweighted) weights."""
    k = matrix.shape[0]
    total = matrix.sum()
    if total == 0 or k < 2:
        return None
    i, j = np.indices((k, k))
    match weights:
        case "quadratic":
            w = ((i - j) / (k - 1)) ** 2
        case "linear":
            w = np.abs(i - j) / (k - 1)
        case "none":
            w = (i != j).astype(float)
        case _:
            raise ValueError(f"weights={weights!r}; allowed: quadratic, linear, none")
    observed = matrix / total
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    chance = float((w * expected).sum())
    if chance == 0:
        return None
    return 1.0 - float((w * observed).sum()) / chance


def agreement(label: str, judge: Sequence[float], human: Sequence[float], ordinal: bool = True) -> Agreement:
    """Agreement of paired labels; `ordinal=False` (totals) skips kappa and the confusion matrix."""
    if len(judge) != len(human):
        raise ValueError(f"{label}: {len(judge)} judge labels but {len(human)} human labels")
    n = len(judge)
    if n == 0:
        return Agreement(label, 0, None, None, None, None, ())
    j, h = np.asarray(judge, dtype=float), np.asarray(human, dtype=float)
    diff = j - h
    accuracy = float(np.mean(np.abs(diff) < 1e-9))
    mae, bias = float(np.mean(np.abs(diff))), float(np.mean(diff))
    if not ordinal:
        return Agreement(label, n, accuracy, None, mae, bias, ())
    matrix = confusion_matrix(judge, human)
    return Agreement(
        label, n, accuracy, weighted_kappa(matrix), mae, bias, tuple(tuple(int(c) for c in r) for r in matrix)
    )
