"""Per-policy figures, computed once from the scorer's labels and once from the effective (person-adjusted) scores.

The scorer is the LLM judge or the motion heuristic (labels.py names each view); definitions, also
printed in every report:
- n: episodes with a scored result; totals need every criterion scored (a criterion the heuristic
  cannot see has no score until a person gives one).
- criterion success: score == 1; criterion partial: score >= 0.5.
- full success of an episode: every criterion == 1.
- partial success of an episode: total > 0, i.e. at least one criterion >= 0.5 on the 0 / 0.5 / 1
  scale (docs/judge-research.md §5.7); it includes the full successes.
- override rate: criterion cells with a human override (a "confirmed" one included) / all cells.
- agreement: over cells with a person's override, the scorer's label versus the override's score.
- against truth: where episodes carry virtual ground truth, the scorer's and people's labels versus
  it (report/truth.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluation.report.agreement import Agreement, agreement
from evaluation.report.config import StatsConfig
from evaluation.report.labels import view_kind, view_label
from evaluation.report.scores import PolicyScores, View
from evaluation.report.stats import Estimate, Rate, mean_bca_interval, mean_t_interval, wilson_interval
from evaluation.report.truth import TruthFigures, truth_figures

_EPS = 1e-9


@dataclass(frozen=True)
class CriterionFigures:
    """One criterion of one policy in one view."""

    criterion: str  # id, e.g. "R3"
    name: str  # e.g. "push aside"
    mean: Estimate  # mean score with a t-interval
    success: Rate  # share with score == 1 (Wilson)
    partial: Rate  # share with score >= 0.5 (Wilson)

    def to_dict(self) -> dict[str, object]:
        """Plain data for the JSON output."""
        return {
            "criterion": self.criterion,
            "name": self.name,
            "mean": self.mean.to_dict(),
            "success_rate": self.success.to_dict(),
            "partial_rate": self.partial.to_dict(),
        }


@dataclass(frozen=True)
class ViewFigures:
    """A policy's figures in one view (the scorer's labels only, or effective)."""

    view: View  # which scores
    label: str  # where they come from, in words: "heuristic", "judge (<model>)", "effective (... overrides)"
    kind: str  # short name for the JSON output: "heuristic", "judge" or "effective"
    total_t: Estimate  # mean total reward with a t-interval (primary)
    total_bca: Estimate  # mean total reward with a BCa bootstrap interval
    full_success: Rate  # episodes with every criterion == 1
    partial_success: Rate  # episodes with total > 0
    criteria: tuple[CriterionFigures, ...]  # in rubric order

    def to_dict(self) -> dict[str, object]:
        """Plain data for the JSON output."""
        return {
            "view": self.kind,
            "label": self.label,
            "mean_total_t": self.total_t.to_dict(),
            "mean_total_bca": self.total_bca.to_dict(),
            "full_success_rate": self.full_success.to_dict(),
            "partial_success_rate": self.partial_success.to_dict(),
            "criteria": [c.to_dict() for c in self.criteria],
        }


@dataclass(frozen=True)
class OverrideFigures:
    """How much people changed of a policy's scores."""

    cells: Rate  # criterion cells with an override / all cells (Wilson)
    episodes: Rate  # episodes with at least one override / all episodes (Wilson)
    changed: int  # overrides whose score differs from the judge's label
    per_criterion: tuple[tuple[str, int, float | None], ...]  # (criterion, overrides, mean new − judge)

    def to_dict(self) -> dict[str, object]:
        """Plain data for the JSON output."""
        return {
            "cell_rate": self.cells.to_dict(),
            "episode_rate": self.episodes.to_dict(),
            "changed": self.changed,
            "per_criterion": [{"criterion": c, "overrides": k, "mean_delta": d} for c, k, d in self.per_criterion],
        }


@dataclass(frozen=True)
class PolicySummary:
    """Everything the report says about one policy."""

    scores: PolicyScores  # the inputs
    judge: ViewFigures  # the scorer's figures (the judge's or the heuristic's: see its label)
    effective: ViewFigures  # person-adjusted figures
    overrides: OverrideFigures  # override rate
    agreement: tuple[Agreement, ...]  # per criterion, then "total"
    truth: TruthFigures | None = None  # against virtual ground truth (None: no episode recorded on the virtual rig)

    def view(self, view: View) -> ViewFigures:
        """The figures of a view."""
        return self.judge if view is View.JUDGE else self.effective

    def label(self, view: View) -> str:
        """Where the figures of a view come from, in words."""
        return self.view(view).label


def summarise(scores: PolicyScores, options: StatsConfig) -> PolicySummary:
    """Compute a policy's figures."""
    return PolicySummary(
        scores=scores,
        judge=view_figures(scores, View.JUDGE, options),
        effective=view_figures(scores, View.EFFECTIVE, options),
        overrides=override_figures(scores),
        agreement=judge_human_agreement(scores),
        truth=truth_figures(scores),
    )


def view_figures(scores: PolicyScores, view: View, options: StatsConfig) -> ViewFigures:
    """Figures of one view."""
    totals = scores.totals(view)
    max_total = float(len(scores.criteria))
    criteria = []
    for cid, name in scores.criteria:
        values = scores.values(cid, view)
        criteria.append(
            CriterionFigures(
                cid,
                name,
                mean_t_interval(values, bounds=(0.0, 1.0)),
                wilson_interval(sum(v >= 1 - _EPS for v in values), len(values)),
                wilson_interval(sum(v >= 0.5 - _EPS for v in values), len(values)),
            )
        )
    return ViewFigures(
        view=view,
        label=view_label(scores, view),
        kind=view_kind(scores, view),
        total_t=mean_t_interval(totals, bounds=(0.0, max_total)),
        total_bca=mean_bca_interval(totals, options.seed, options.bootstrap_resamples),
        full_success=wilson_interval(sum(t >= max_total - _EPS for t in totals), len(totals)),
        partial_success=wilson_interval(sum(t > _EPS for t in totals), len(totals)),
        criteria=tuple(criteria),
    )


def override_figures(scores: PolicyScores) -> OverrideFigures:
    """Override counts and rates."""
    cells = [c for e in scores.episodes for c in e.cells]
    overridden = [c for c in cells if c.human is not None]
    changed = sum(c.judge is None or abs(c.human.score - c.judge) > _EPS for c in overridden)  # type: ignore[union-attr]
    per_criterion = []
    for cid in scores.criterion_ids:
        mine = [c for c in overridden if c.criterion == cid]
        deltas = [c.human.score - c.judge for c in mine if c.judge is not None]  # type: ignore[union-attr]
        per_criterion.append((cid, len(mine), sum(deltas) / len(deltas) if deltas else None))
    return OverrideFigures(
        cells=wilson_interval(len(overridden), len(cells)),
        episodes=wilson_interval(sum(e.overridden for e in scores.episodes), len(scores.episodes)),
        changed=changed,
        per_criterion=tuple(per_criterion),
    )


def judge_human_agreement(scores: PolicyScores) -> tuple[Agreement, ...]:
    """Per criterion over the overridden cells that have a judge label; the total over fully labelled episodes.

    A "confirmed" override is a human label equal to the judge's, so it counts as agreement. The
    total's row uses episodes whose every criterion carries a human label.
    """
    rows = []
    for i, cid in enumerate(scores.criterion_ids):
        pairs = [
            (c.judge, c.human.score)
            for e in scores.episodes
            if (c := e.cells[i]).human is not None and c.judge is not None
        ]
        rows.append(agreement(cid, [j for j, _ in pairs], [h for _, h in pairs]))
    complete = [e for e in scores.episodes if all(c.human is not None and c.judge is not None for c in e.cells)]
    rows.append(
        agreement(
            "total",
            [e.total(View.JUDGE) for e in complete],
            [e.total(View.EFFECTIVE) for e in complete],
            ordinal=False,
        )
    )
    return tuple(rows)
