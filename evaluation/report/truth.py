"""Agreement with virtual ground truth: the scorer's labels, and people's, against the truth as the reference.

Episodes recorded on the virtual rig carry scores computed from the simulated cloth (evaluation/truth.py).
The measure is the report's own between scorer and person (agreement.py), with the truth in the
person's place: accuracy, quadratic-weighted kappa and the confusion matrix compare levels, so the
truth is snapped to the nearest rubric level (0 / 0.5 / 1; a tie goes to the lower level, so truth
never claims more than it shows); MAE and bias use its continuous value, bias = rater − truth.
Rows: per criterion over the cells that have both a rater's score and a truth; "total" over the
episodes where every criterion has both (the sums; accuracy on the snapped sums). People's labels
are their latest current overrides, on the cells they reviewed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from evaluation.report.agreement import LEVELS, Agreement, agreement
from evaluation.report.scores import Cell, PolicyScores

Rated = Callable[[Cell], float | None]  # a rater's score of a cell (None: the rater gave none)


@dataclass(frozen=True)
class TruthFigures:
    """A policy's scores against virtual ground truth."""

    episodes: int  # episodes with truth on at least one criterion
    whole_recording: int  # of them, trimmed after recording: their truth describes the whole recording
    means: tuple[tuple[str, float | None], ...]  # (criterion or "total", mean truth over the episodes with it)
    scorer: tuple[Agreement, ...]  # the scorer's labels against truth: per criterion, then "total"
    person: tuple[Agreement, ...]  # people's labels against truth: per criterion, then "total"

    def to_dict(self) -> dict[str, object]:
        """Plain data for the JSON output (confusion matrices named rater by truth)."""
        return {
            "episodes": self.episodes,
            "whole_recording": self.whole_recording,
            "criterion_means": {c: m for c, m in self.means},
            "scorer_vs_truth": [_named(a) for a in self.scorer],
            "person_vs_truth": [_named(a) for a in self.person],
        }


def snap(value: float) -> float:
    """The rubric level nearest a truth score (a tie goes to the lower level)."""
    return min(LEVELS, key=lambda level: (abs(value - level), level))


def truth_figures(scores: PolicyScores) -> TruthFigures | None:
    """A policy's figures against truth; None when none of its episodes has any."""
    with_truth = [e for e in scores.episodes if any(c.truth is not None for c in e.cells)]
    if not with_truth:
        return None
    means = []
    for i, cid in enumerate(scores.criterion_ids):
        values = [t for e in with_truth if (t := e.cells[i].truth) is not None]
        means.append((cid, float(np.mean(values)) if values else None))
    totals = [sum(c.truth or 0.0 for c in e.cells) for e in with_truth if all(c.truth is not None for c in e.cells)]
    means.append(("total", float(np.mean(totals)) if totals else None))
    return TruthFigures(
        episodes=len(with_truth),
        whole_recording=sum(e.truth_of_whole_recording for e in with_truth),
        means=tuple(means),
        scorer=_against(scores, lambda c: c.judge),
        person=_against(scores, lambda c: None if c.human is None else c.human.score),
    )


def against_truth(label: str, rater: Sequence[float], truth: Sequence[float]) -> Agreement:
    """Agreement of a rater's scores with the truth of the same cells, one pair per cell."""
    return _with_continuous(agreement(label, rater, [snap(t) for t in truth]), rater, truth)


def _against(scores: PolicyScores, rated: Rated) -> tuple[Agreement, ...]:
    """Per criterion, then the total: a rater's scores (`rated` of a cell, None: no score) against truth."""
    rows = []
    for i, cid in enumerate(scores.criterion_ids):
        cells = [e.cells[i] for e in scores.episodes]
        pairs = [(r, c.truth) for c in cells if (r := rated(c)) is not None and c.truth is not None]
        rows.append(against_truth(cid, [r for r, _ in pairs], [t for _, t in pairs]))
    complete = [e.cells for e in scores.episodes if all(rated(c) is not None and c.truth is not None for c in e.cells)]
    rater = [sum(rated(c) or 0.0 for c in cells) for cells in complete]
    truth = [sum(c.truth or 0.0 for c in cells) for cells in complete]
    snapped = [sum(snap(c.truth or 0.0) for c in cells) for cells in complete]
    rows.append(_with_continuous(agreement("total", rater, snapped, ordinal=False), rater, truth))
    return tuple(rows)


def _with_continuous(base: Agreement, rater: Sequence[float], truth: Sequence[float]) -> Agreement:
    """The agreement with MAE and bias taken against the continuous truth (levels kept for the rest)."""
    if not rater:
        return base
    diff = np.asarray(rater, dtype=float) - np.asarray(truth, dtype=float)
    return replace(base, mae=float(np.mean(np.abs(diff))), bias=float(np.mean(diff)))


def _named(a: Agreement) -> dict[str, object]:
    doc = a.to_dict()
    doc["confusion_rater_by_truth"] = doc.pop("confusion_judge_by_human")
    return doc
