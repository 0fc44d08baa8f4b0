"""The report's tables as plain text cells, shared by the HTML page, the Markdown file and the terminal summary.

Numbers are formatted once here: an estimate reads `1.50 [0.62, 2.38]` (or `0.00 (no variation in 7
episodes)` when there is no spread to build an interval from), a rate `7/10 70 % [40, 89]`, a p-value
`0.012 (exact)`. Every column or cell that shows scores names their source (labels.py): "heuristic",
"judge (<model>)", "effective (... person overrides)", and "virtual ground truth" where episodes carry it
(two decimals: it is continuous).
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluation.report.agreement import Agreement
from evaluation.report.comparison import Difference
from evaluation.report.labels import column_label, kind_word, scorer_label, view_label
from evaluation.report.model import Report
from evaluation.report.scores import EpisodeScores, View
from evaluation.report.stats import NO_VARIATION_WITHIN, Estimate, Rate
from evaluation.report.summary import PolicySummary
from evaluation.vocabulary import TRUTH_LABEL, ScoreSource


@dataclass(frozen=True)
class TextTable:
    """A titled table of strings."""

    key: str  # stable id (HTML anchor)
    title: str  # heading
    headers: tuple[str, ...]  # column names
    rows: tuple[tuple[str, ...], ...]  # cells, as text
    note: str = ""  # one line under the table


def fmt_number(value: float | None, digits: int = 2) -> str:
    """A number, or an en dash for none."""
    return "–" if value is None else f"{value:.{digits}f}"


def fmt_estimate(e: Estimate, digits: int = 2) -> str:
    """`value [low, high]`; `value (no variation in n episodes)` without spread; the value alone otherwise."""
    if e.value is None:
        return "–"
    if e.no_variation:
        return f"{e.value:.{digits}f} ({fmt_no_variation(e)})"
    if e.low is None or e.high is None:
        return f"{e.value:.{digits}f}"
    return f"{e.value:.{digits}f} [{e.low:.{digits}f}, {e.high:.{digits}f}]"


def fmt_rate(r: Rate) -> str:
    """`k/n pct % [low, high]` in percent."""
    e = r.estimate
    if e.value is None or e.low is None or e.high is None:
        return "–"
    return f"{r.successes}/{e.n} {100 * e.value:.0f} % [{100 * e.low:.0f}, {100 * e.high:.0f}]"


def fmt_no_variation(e: Estimate) -> str:
    """What an estimate without spread says instead of an interval."""
    if e.method == NO_VARIATION_WITHIN:
        return f"no variation within either policy, {e.n} episodes"
    return f"no variation in {e.n} episode{'' if e.n == 1 else 's'}"


def fmt_p(p: float | None, exact: bool | None = None) -> str:
    """A p-value with three significant places, and how it was computed."""
    if p is None:
        return "–"
    text = "< 0.001" if p < 0.001 else f"{p:.3f}"
    return text if exact is None else f"{text} ({'exact' if exact else 'Monte Carlo'})"


def overview_table(report: Report) -> TextTable:
    """What each policy is and where its scores come from."""
    rows = []
    for p in report.policies:
        s, o = p.scores, p.overrides
        reviewed = sum(e.reviewed for e in s.episodes)
        rows.append(
            (
                s.name,
                s.source,
                scorer_label(s),
                ", ".join(s.models),
                str(len(s.episodes)),
                str(reviewed),
                fmt_rate(o.cells),
                str(o.changed),
            )
        )
    return TextTable(
        "policies",
        "Policies",
        (
            "policy",
            "selection",
            "scores from",
            "model / version",
            "n",
            "reviewed episodes",
            "override rate (cells)",
            "changed scores",
        ),
        tuple(rows),
    )


def headline_table(report: Report) -> TextTable:
    """Mean total and episode success rates, the scorer's beside the effective (person-adjusted) ones."""
    rows = []
    for p in report.policies:
        for view in View:
            f = p.view(view)
            rows.append(
                (
                    p.scores.name,
                    f.label,
                    str(f.total_t.n),
                    fmt_estimate(f.total_t),
                    fmt_estimate(f.total_bca),
                    fmt_rate(f.partial_success),
                    fmt_rate(f.full_success),
                )
            )
    max_total = len(report.criteria)
    return TextTable(
        "headline",
        "Mean total reward and success rates",
        (
            "policy",
            "scores",
            "n",
            f"mean total (0–{max_total}) [95 % t]",
            "[95 % BCa]",
            "partial success (total > 0)",
            "full success (all = 1)",
        ),
        tuple(rows),
        "intervals are 95 %; rates are k/n, percent [Wilson interval]",
    )


def criteria_table(report: Report) -> TextTable:
    """Per-criterion means and success rates, both views, and the overrides of each criterion."""
    policies = [p.scores for p in report.policies]
    raw, eff, kind = column_label(policies, View.JUDGE), "effective", kind_word(policies)
    rows = []
    for p in report.policies:
        overrides = {c: (k, d) for c, k, d in p.overrides.per_criterion}
        for i, (cid, name) in enumerate(p.scores.criteria):
            j, e = p.judge.criteria[i], p.effective.criteria[i]
            count, delta = overrides[cid]
            rows.append(
                (
                    p.scores.name,
                    f"{cid} {name}",
                    fmt_estimate(j.mean),
                    fmt_estimate(e.mean),
                    fmt_rate(j.success),
                    fmt_rate(e.success),
                    fmt_rate(j.partial),
                    fmt_rate(e.partial),
                    f"{count}" + ("" if delta is None else f" (mean Δ {delta:+.2f})"),
                )
            )
    return TextTable(
        "criteria",
        "Per criterion",
        (
            "policy",
            "criterion",
            f"mean, {raw}",
            f"mean, {eff}",
            f"success = 1, {raw}",
            f"success = 1, {eff}",
            f"≥ 0.5, {raw}",
            f"≥ 0.5, {eff}",
            "person overrides",
        ),
        tuple(rows),
        f"means with 95 % t-intervals clipped to 0..1; rates with 95 % Wilson intervals; {eff}: "
        f"{column_label(policies, View.EFFECTIVE)}; Δ = person − {kind}",
    )


def comparison_table(report: Report) -> TextTable:
    """Differences between policies."""
    rows = []
    for c in report.comparisons:
        for d in (c.total, *c.criteria):
            p_text = fmt_p(d.test.p_value, d.test.exact)
            if d.test.p_value is None and d.difference.no_variation:
                p_text = fmt_no_variation(d.difference)
            rows.append(
                (
                    f"{c.first} − {c.second}",
                    report.comparison_label(c),
                    _diff_label(d),
                    fmt_estimate(d.difference),
                    p_text,
                    fmt_p(d.p_holm),
                )
            )
    return TextTable(
        "differences",
        "Differences between policies",
        ("pair", "scores", "quantity", "difference [95 % Welch]", "permutation p (two-sided)", "p, Holm (criteria)"),
        tuple(rows),
        "difference = first − second; unpaired (different episodes); Welch intervals clipped to the possible range",
    )


def agreement_table(report: Report) -> TextTable:
    """The scorer versus people on reviewed cells, per policy and criterion."""
    rows = [_agreement_row(p, a) for p in report.policies for a in p.agreement]
    kind = kind_word([p.scores for p in report.policies])
    return TextTable(
        "agreement",
        f"{kind.capitalize()} versus person (reviewed cells)",
        ("policy", "criterion", "n", "accuracy", "kappa (quadratic)", "MAE", f"bias ({kind} − person)"),
        tuple(rows),
        "n = cells with a person's override ('confirmed' included); total: episodes reviewed on every criterion",
    )


def truth_table(report: Report) -> TextTable | None:
    """The scorer's and people's scores against virtual ground truth, per policy and criterion (None: no truth)."""
    rows = []
    for p in report.policies:
        if p.truth is None:
            continue
        means = dict(p.truth.means)
        raters = ((scorer_label(p.scores), p.truth.scorer), (ScoreSource.PERSON.value, p.truth.person))
        for i, label in enumerate((*p.scores.criterion_ids, "total")):
            for rater, rows_of in raters:
                a = rows_of[i]
                rows.append((p.scores.name, label, fmt_number(means.get(label)), rater, *_agreement_row(p, a)[2:]))
    if not rows:
        return None
    return TextTable(
        "truth",
        f"Against {TRUTH_LABEL}",
        (
            "policy",
            "criterion",
            f"{TRUTH_LABEL} mean",
            "scores",
            "n",
            "accuracy",
            "kappa (quadratic)",
            "MAE",
            "bias (scores − truth)",
        ),
        tuple(rows),
        f"{TRUTH_LABEL} is the reference: accuracy and kappa on it snapped to 0 / 0.5 / 1, MAE and bias on its "
        "continuous value; person: cells with a person's override; total: episodes with every criterion of both",
    )


def truth_line(p: PolicySummary) -> str:
    """One line for the terminal: the totals of the scorer and of people against virtual ground truth."""
    truth = p.truth
    if truth is None:
        return f"{p.scores.name}: no {TRUTH_LABEL}"
    parts = []
    for rater, rows in ((scorer_label(p.scores), truth.scorer), (ScoreSource.PERSON.value, truth.person)):
        total = rows[-1]
        bias = "–" if total.bias is None else f"{total.bias:+.2f}"
        parts.append(f"{rater} MAE {fmt_number(total.mae)}, bias {bias} (n = {total.n})")
    return f"{p.scores.name} against {TRUTH_LABEL} ({truth.episodes} episodes), totals: {'; '.join(parts)}"


def episodes_table(p: PolicySummary) -> TextTable:
    """Every episode of a policy: the scorer's and the effective scores, and who changed what."""
    s = p.scores
    raw, eff = view_label(s, View.JUDGE), view_label(s, View.EFFECTIVE)
    with_dataset = len(s.dataset_ids) > 1
    rows = []
    for e in s.episodes:
        scored = " ".join(f"{c.criterion}={fmt_score(c.judge)}" for c in e.cells)
        adjusted = " ".join(f"{c.criterion}={fmt_score(c.effective)}" for c in e.cells)
        notes = "; ".join(
            f"{c.criterion} {fmt_score(c.judge)}→{fmt_score(c.human.score)} ({c.human.reason}, {c.human.reviewer})"
            for c in e.cells
            if c.human is not None
        )
        truth = (_truth_text(e),) if s.has_truth else ()
        rows.append(
            (
                e.label(with_dataset),
                scored,
                fmt_score(e.total(View.JUDGE)),
                adjusted,
                fmt_score(e.total(View.EFFECTIVE)),
                *truth,
                notes,
            )
        )
    truth_header = (TRUTH_LABEL,) if s.has_truth else ()
    return TextTable(
        f"episodes-{s.name}",
        f"Episodes of {s.name}",
        ("episode", raw, f"{raw} total", eff, "effective total", *truth_header, "person overrides"),
        tuple(rows),
    )


def all_tables(report: Report) -> list[TextTable]:
    """The summary tables in page order (episode tables are per policy, see `episodes_table`)."""
    truth = truth_table(report)
    return [
        overview_table(report),
        headline_table(report),
        criteria_table(report),
        comparison_table(report),
        agreement_table(report),
        *([truth] if truth is not None else []),
    ]


def fmt_score(value: float | None) -> str:
    """A score as written by people: 0, 0.5, 1, 2.5."""
    return "–" if value is None else f"{value:g}"


def _agreement_row(p: PolicySummary, a: Agreement) -> tuple[str, ...]:
    accuracy = "–" if a.accuracy is None else f"{100 * a.accuracy:.0f} %"
    bias = "–" if a.bias is None else f"{a.bias:+.2f}"
    return (p.scores.name, a.label, str(a.n), accuracy, fmt_number(a.kappa), fmt_number(a.mae), bias)


def _truth_text(e: EpisodeScores) -> str:
    """An episode's truth per criterion, two decimals (it is continuous); "(whole recording)" when trimmed since."""
    if all(c.truth is None for c in e.cells):
        return "–"
    text = " ".join(f"{c.criterion}={fmt_number(c.truth)}" for c in e.cells)
    return f"{text} (whole recording)" if e.truth_of_whole_recording else text


def _diff_label(d: Difference) -> str:
    return "mean total" if d.label == "total" else f"{d.label} mean"
