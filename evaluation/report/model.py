"""The report as data: policy summaries, comparisons, definitions and caveats; the JSON output is its `to_dict`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from evaluation.report.comparison import Comparison, compare_all
from evaluation.report.config import StatsConfig
from evaluation.report.errors import ReportError
from evaluation.report.scores import PolicyScores, View
from evaluation.report.stats import CONFIDENCE
from evaluation.report.summary import PolicySummary, summarise

SMALL_N = 10  # below this many episodes a policy's figures get a caveat
REPORT_FORMAT = 1  # version of the JSON layout

DEFINITIONS: tuple[tuple[str, str], ...] = (
    ("n", "episodes with a scored judge result (the newest per episode among the selected runs); totals and episode "
          "rates need every criterion scored"),
    ("mean total reward", "sum of the criterion scores per episode, averaged; 95 % Student-t interval (primary: the "
                          "best coverage at n ≤ 10 in notes/judge-research.md §2.3) and a seeded BCa bootstrap "
                          "interval beside it; the plain percentile bootstrap is not used (it under-covers at n = 7). "
                          "t-intervals are clipped to the score scale"),
    ("criterion mean", "average score of the criterion (0, 0.5 or 1) with a 95 % t-interval"),
    ("criterion success / partial", "share of episodes with the criterion at 1 / at ≥ 0.5, 95 % Wilson interval"),
    ("full success", "episodes with every criterion at 1, 95 % Wilson interval"),
    ("partial success", "episodes with total > 0, i.e. at least one criterion ≥ 0.5 on the 0 / 0.5 / 1 scale; it "
                        "includes the full successes; 95 % Wilson interval"),
    ("judge / adjusted", "judge: the judge's labels only; adjusted (effective): the latest human override of a "
                         "criterion, else the judge's label. The judge's records are never changed"),
    ("override rate", "criterion cells with a human override (a 'confirmed' review included) / all cells; reviewed "
                      "episodes: episodes with at least one override"),
    ("agreement", "on cells with a human override: accuracy (identical label), Cohen's kappa with quadratic weights "
                  "on the 0 / 0.5 / 1 scale, mean absolute error and bias (judge − human; negative: the judge scores "
                  "lower). A 'confirmed' override counts as agreement; cells nobody reviewed are not counted. The "
                  "total row uses episodes whose every criterion has a human label"),
    ("difference", "first − second policy; 95 % Welch interval; two-sided permutation test of the difference in "
                   "means (exact when every split can be enumerated, else Monte Carlo with the report's seed); "
                   "per-criterion p-values also Holm-adjusted across the criteria"),
)  # fmt: skip


@dataclass(frozen=True)
class Report:
    """Everything one so101-report run found."""

    title: str  # heading
    created_at: str  # UTC ISO 8601
    stats: StatsConfig  # seed and resample counts used
    policies: tuple[PolicySummary, ...]  # in the order given
    comparisons: tuple[Comparison, ...]  # every pair, both views
    caveats: tuple[str, ...]  # what a reader must keep in mind

    @property
    def criteria(self) -> tuple[tuple[str, str], ...]:
        """(id, name) of the shared criteria."""
        return self.policies[0].scores.criteria

    def to_dict(self) -> dict[str, object]:
        """The JSON document."""
        return {
            "format": REPORT_FORMAT,
            "title": self.title,
            "created_at": self.created_at,
            "confidence": CONFIDENCE,
            "stats": {
                "seed": self.stats.seed, "bootstrap_resamples": self.stats.bootstrap_resamples,
                "permutation_resamples": self.stats.permutation_resamples,
                "max_exact_permutations": self.stats.max_exact_permutations,
            },
            "criteria": [{"id": c, "name": n} for c, n in self.criteria],
            "definitions": dict(DEFINITIONS),
            "policies": [_policy_dict(p) for p in self.policies],
            "comparisons": [c.to_dict() for c in self.comparisons],
            "caveats": list(self.caveats),
        }  # fmt: skip


def build_report(policies: list[PolicyScores], options: StatsConfig, title: str) -> Report:
    """Compute every figure.

    Raises:
        ReportError: No policy, or the policies were judged against different criteria.
    """
    if not policies:
        raise ReportError("no policy to report on")
    ids = {p.criterion_ids for p in policies}
    if len(ids) > 1:
        detail = "; ".join(f"{p.name}: {list(p.criterion_ids)}" for p in policies)
        raise ReportError(
            f"the policies were judged against different criteria ({detail}); judge them under one rubric to compare"
        )
    summaries = tuple(summarise(p, options) for p in policies)
    return Report(
        title=title,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        stats=options,
        policies=summaries,
        comparisons=tuple(compare_all(policies, options)),
        caveats=tuple(_caveats(policies)),
    )


def _caveats(policies: list[PolicyScores]) -> list[str]:
    out = []
    for p in policies:
        n = len(p.episodes)
        if n < SMALL_N:
            out.append(
                f"{p.name}: n = {n}; intervals this wide cannot separate close policies "
                f"(≥ 20 episodes per policy for claims finer than ±0.5 on the total)"
            )
        if p.scorer == "heuristic":
            out.append(f"{p.name}: scores come from the motion heuristic, which never sees the cloth")
        if p.left_out:
            out.append(f"{p.name}: {p.left_out} episode(s) scored only by another scorer were left out")
    if any(any(e.overridden for e in p.episodes) for p in policies):
        out.append(
            "agreement is measured on reviewed cells only; episodes routed for review are not a random sample, "
            "so it describes the hard cases unless reviewers also confirm a random audit sample"
        )
    models = {m for p in policies for m in p.models}
    rubrics = {v for p in policies for v in p.rubric_versions}
    if len(models) > 1:
        out.append(f"the policies were judged by different models ({sorted(models)}): differences mix judge and policy")
    if len(rubrics) > 1:
        out.append(f"several rubric versions are mixed ({sorted(rubrics)})")
    return out


def _policy_dict(p: PolicySummary) -> dict[str, object]:
    s = p.scores
    return {
        "name": s.name, "source": s.source, "store_path": s.store_path, "dataset_ids": list(s.dataset_ids),
        "scorer": s.scorer, "models": list(s.models), "rubric_versions": list(s.rubric_versions),
        "n": len(s.episodes), "left_out": s.left_out,
        "judge": p.judge.to_dict(), "effective": p.effective.to_dict(), "overrides": p.overrides.to_dict(),
        "agreement": [a.to_dict() for a in p.agreement],
        "episodes": [
            {
                "dataset_id": e.dataset_id, "episode_index": e.episode_index, "reviewed": e.reviewed,
                "judge_total": e.total(View.JUDGE), "effective_total": e.total(View.EFFECTIVE),
                "criteria": {
                    c.criterion: {
                        "judge": c.judge, "effective": c.effective,
                        "override": None if c.human is None else {
                            "score": c.human.score, "reason": c.human.reason, "reviewer": c.human.reviewer,
                            "created_at": c.human.created_at,
                        },
                    }
                    for c in e.cells
                },
            }
            for e in s.episodes
        ],
    }  # fmt: skip
