"""The report as data: policy summaries, comparisons, definitions and caveats; the JSON output is its `to_dict`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from evaluation.report.agreement import Agreement
from evaluation.report.bounds import bounded
from evaluation.report.comparison import Comparison, compare_all
from evaluation.report.config import StatsConfig
from evaluation.report.errors import ReportError
from evaluation.report.labels import cell_source, column_label, kind_word, scorer_label
from evaluation.report.scores import PolicyScores, View
from evaluation.report.stats import CONFIDENCE
from evaluation.report.summary import PolicySummary, summarise
from evaluation.vocabulary import TRUTH_LABEL

SMALL_N = 10  # below this many episodes a policy's figures get a caveat
REPORT_FORMAT = 2  # version of the JSON layout (2: views named by their scorer, every score with its source)

DEFINITIONS: tuple[tuple[str, str], ...] = (
    (
        "n",
        "episodes with a scored result of the policy's scorer (the newest per episode among the selected runs); "
        "totals and episode rates need every criterion scored, so an episode with a criterion its scorer could not "
        "see (route code heuristic_blind) counts in them only once a person has scored that criterion",
    ),
    (
        "scores from",
        "'heuristic': the offline motion heuristic, from joint motion and gripper events only. It never "
        "sees the cloth: a criterion about the cloth's final state gets 0 when the motion rules it out "
        "and no score otherwise (a person gives it), and an arm that never left its start pose counts for "
        "nothing. A language model's scores are labelled with its model id in brackets. 'person': a "
        "review override. 'effective (… + N person overrides)': the latest person's override of a "
        "criterion, else the scorer's score; the scorer's records are never changed",
    ),
    (
        "mean total reward",
        "sum of the criterion scores per episode, averaged; 95 % Student-t interval (primary: the "
        "best coverage at n ≤ 10 in docs/judge-research.md §2.3) and a seeded BCa bootstrap "
        "interval beside it; the plain percentile bootstrap is not used (it under-covers at n = 7). "
        "t-intervals are clipped to the score scale (0 to the number of criteria)",
    ),
    ("criterion mean", "average score of the criterion (0, 0.5 or 1) with a 95 % t-interval clipped to 0..1"),
    (
        "no variation in n episodes",
        "every one of the n episodes has the same score, so no interval can be estimated "
        "from them (and, for a difference, there is nothing to test): more episodes are "
        "needed, not a narrower interval",
    ),
    ("criterion success / partial", "share of episodes with the criterion at 1 / at ≥ 0.5, 95 % Wilson interval"),
    ("full success", "episodes with every criterion at 1, 95 % Wilson interval"),
    (
        "partial success",
        "episodes with total > 0, i.e. at least one criterion ≥ 0.5 on the 0 / 0.5 / 1 scale; it "
        "includes the full successes; 95 % Wilson interval",
    ),
    (
        "override rate",
        "criterion cells with a person's override (a 'confirmed' review included) / all cells; "
        "reviewed episodes: episodes with at least one override",
    ),
    (
        "agreement",
        "on cells with a person's override: accuracy (identical label), Cohen's kappa with quadratic "
        "weights on the 0 / 0.5 / 1 scale, mean absolute error and bias (scorer − person; negative: the "
        "scorer scores lower). A 'confirmed' override counts as agreement; cells nobody reviewed are not "
        "counted. The total row uses episodes whose every criterion has a person's label",
    ),
    (
        "virtual ground truth",
        "scores computed from the simulated cloth's state, for episodes recorded on the virtual rig only: "
        "continuous 0..1, the reference beside the scorer's and people's scores (never overridden, never "
        "part of the effective scores). Against it, the agreement measures above with truth in the person's "
        "place: accuracy, kappa and the confusion matrix on the truth snapped to the nearest level (a tie to "
        "the lower), MAE and bias (scores − truth) on its continuous value. A trimmed episode's truth "
        "describes the whole recording",
    ),
    (
        "difference",
        "first − second policy; 95 % Welch interval, clipped to the possible range (−1..1 for a criterion, "
        "−K..K for the total of K criteria; clipped, not computed on a bounded scale); two-sided "
        "permutation test of the difference in means (exact when every split can be enumerated, else "
        "Monte Carlo with the report's seed); per-criterion p-values also Holm-adjusted across the "
        "criteria that vary",
    ),
)


@dataclass(frozen=True)
class Report:
    """Everything one so101-report run found."""

    title: str  # heading
    created_at: str  # UTC ISO 8601
    stats: StatsConfig  # seed and resample counts used
    policies: tuple[PolicySummary, ...]  # in the order given
    comparisons: tuple[Comparison, ...]  # every pair, both views (intervals clipped: see bounds.py)
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
                "seed": self.stats.seed,
                "bootstrap_resamples": self.stats.bootstrap_resamples,
                "permutation_resamples": self.stats.permutation_resamples,
                "max_exact_permutations": self.stats.max_exact_permutations,
            },
            "criteria": [{"id": c, "name": n} for c, n in self.criteria],
            "definitions": dict(DEFINITIONS),
            "policies": [_policy_dict(p) for p in self.policies],
            "comparisons": [self._comparison_dict(c) for c in self.comparisons],
            "caveats": list(self.caveats),
        }

    def comparison_label(self, c: Comparison) -> str:
        """Where the scores of a comparison come from, in words (e.g. "heuristic")."""
        return column_label(self._pair(c), c.view)

    def _pair(self, c: Comparison) -> list[PolicyScores]:
        by_name = {p.scores.name: p.scores for p in self.policies}
        return [by_name[c.first], by_name[c.second]]

    def _comparison_dict(self, c: Comparison) -> dict[str, object]:
        kind = kind_word(self._pair(c)) if c.view is View.JUDGE else View.EFFECTIVE.value
        return c.to_dict() | {"view": kind, "label": self.comparison_label(c)}


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
        comparisons=tuple(bounded(c, len(policies[0].criteria)) for c in compare_all(policies, options)),
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
            out.append(
                f"{p.name}: scores come from the motion heuristic, which never sees the cloth; criteria about the "
                f"cloth's final state are left to a person unless the motion rules them out"
            )
        unscored = sum(e.total(View.EFFECTIVE) is None for e in p.episodes)
        if unscored:
            out.append(
                f"{p.name}: {unscored} of {n} episode(s) have a criterion without a score, so totals and episode "
                f"rates count {n - unscored}; score them in so101-review to count them"
            )
        if p.left_out:
            out.append(f"{p.name}: {p.left_out} episode(s) scored only by another scorer were left out")
        out += _truth_caveats(p)
    if any(any(e.overridden for e in p.episodes) for p in policies):
        out.append(
            "agreement is measured on reviewed cells only; episodes routed for review are not a random sample, "
            "so it describes the hard cases unless reviewers also confirm a random audit sample"
        )
    models = {m for p in policies for m in p.models}
    rubrics = {v for p in policies for v in p.rubric_versions}
    if len(models) > 1:
        out.append(
            f"the policies were scored by different models ({sorted(models)}): differences mix scorer and policy"
        )
    if len(rubrics) > 1:
        out.append(f"several rubric versions are mixed ({sorted(rubrics)})")
    return out


def _truth_caveats(p: PolicyScores) -> list[str]:
    with_truth = [e for e in p.episodes if any(c.truth is not None for c in e.cells)]
    if not with_truth:
        return []
    out = [
        f"{p.name}: {TRUTH_LABEL} covers {len(with_truth)} of {len(p.episodes)} episode(s); it is computed from "
        f"the simulated cloth, so agreement with it describes scores of the virtual rig's episodes"
    ]
    whole = sum(e.truth_of_whole_recording for e in with_truth)
    if whole:
        out.append(
            f"{p.name}: {whole} episode(s) were trimmed after recording: their {TRUTH_LABEL} describes the whole "
            f"recording, not the kept frames"
        )
    return out


def _agreement_dict(a: Agreement) -> dict[str, object]:
    """Agreement as data, its confusion matrix named scorer by person (the scorer may be the heuristic)."""
    doc = a.to_dict()
    doc["confusion_scorer_by_person"] = doc.pop("confusion_judge_by_human")
    return doc


def _policy_dict(p: PolicySummary) -> dict[str, object]:
    s = p.scores
    return {
        "name": s.name,
        "source": s.source,
        "store_path": s.store_path,
        "dataset_ids": list(s.dataset_ids),
        "scorer": s.scorer,
        "scorer_label": scorer_label(s),
        "models": list(s.models),
        "rubric_versions": list(s.rubric_versions),
        "n": len(s.episodes),
        "left_out": s.left_out,
        "unadjusted": p.judge.to_dict(),
        "effective": p.effective.to_dict(),
        "overrides": p.overrides.to_dict(),
        "agreement": [_agreement_dict(a) for a in p.agreement],
        "truth": None
        if p.truth is None
        else {"label": TRUTH_LABEL, "definitions": list(s.truth_definitions)} | p.truth.to_dict(),
        "episodes": [
            {
                "dataset_id": e.dataset_id,
                "episode_index": e.episode_index,
                "reviewed": e.reviewed,
                "unadjusted_total": e.total(View.JUDGE),
                "effective_total": e.total(View.EFFECTIVE),
                **({"truth_of_whole_recording": e.truth_of_whole_recording} if s.has_truth else {}),
                "criteria": {
                    c.criterion: {
                        **({"truth": {"score": c.truth, "source": TRUTH_LABEL}} if s.has_truth else {}),
                        "unadjusted": {"score": c.judge, "source": cell_source(s, c, View.JUDGE)},
                        "effective": {"score": c.effective, "source": cell_source(s, c, View.EFFECTIVE)},
                        "override": None
                        if c.human is None
                        else {
                            "score": c.human.score,
                            "reason": c.human.reason,
                            "reviewer": c.human.reviewer,
                            "created_at": c.human.created_at,
                        },
                    }
                    for c in e.cells
                },
            }
            for e in s.episodes
        ],
    }
