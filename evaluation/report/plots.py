"""Report plots as PNG bytes: the per-episode heatmap, per-criterion bars, and the policy comparison bars.

Figures are drawn on matplotlib's Agg canvas directly (no pyplot, no global backend switch), so
plotting is safe from any thread and needs no display. Every title, legend and axis label names the
scores' source (labels.py): "heuristic", "judge (<model>)", "effective (... person overrides)".
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import LinearSegmentedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from evaluation.report.labels import column_label, scorer_kind, view_label
from evaluation.report.model import Report
from evaluation.report.scores import PolicyScores, View
from evaluation.report.stats import Estimate
from evaluation.vocabulary import TRUTH_LABEL

DPI = 100  # pixels per inch of the PNG files
_CMAP = LinearSegmentedColormap.from_list("score", ["#d73027", "#fee08b", "#1a9850"])  # 0 red, 0.5 yellow, 1 green
_MISSING = "#bdbdbd"  # cells without a score
_ANNOTATE_MAX_ROWS = 60  # beyond this many episodes the heatmap cells carry no text
COMPARISON_PNG = "comparison.png"  # file name of the policy comparison bars
CRITERIA_PNG = "criteria.png"  # file name of the per-criterion bars


def heatmap_name(index: int) -> str:
    """File name of the heatmap of the policy at `index` (names may hold any character, positions do not)."""
    return f"heatmap-{index + 1}.png"


def render_plots(report: Report) -> dict[str, bytes]:
    """Every plot of a report: PNG bytes by file name."""
    plots = {COMPARISON_PNG: comparison_png(report), CRITERIA_PNG: criteria_png(report)}
    for i, p in enumerate(report.policies):
        plots[heatmap_name(i)] = heatmap_png(p.scores)
    return plots


def heatmap_png(policy: PolicyScores) -> bytes:
    """The heatmap of a policy as PNG bytes (see `heatmap_figure`)."""
    return _png(heatmap_figure(policy))


def criteria_png(report: Report) -> bytes:
    """The per-criterion bars as PNG bytes (see `criteria_figure`)."""
    return _png(criteria_figure(report))


def comparison_png(report: Report) -> bytes:
    """The policy comparison bars as PNG bytes (see `comparison_figure`)."""
    return _png(comparison_figure(report))


def heatmap_figure(policy: PolicyScores) -> Figure:
    """Episodes (rows) by criteria (columns), effective scores; overridden cells outlined and labelled scorer→person."""
    episodes = policy.episodes
    rows, cols = len(episodes), len(policy.criteria)
    with_dataset = len(policy.dataset_ids) > 1
    row_h = 0.32 if rows <= _ANNOTATE_MAX_ROWS else max(0.08, 20.0 / rows)
    fig = Figure(figsize=(2.2 + 1.3 * cols, 1.8 + row_h * rows), dpi=DPI)
    ax = fig.add_subplot()
    values = np.full((rows, cols), np.nan)
    for r, e in enumerate(episodes):
        for c, cell in enumerate(e.cells):
            if cell.effective is not None:
                values[r, c] = cell.effective
    cmap = _CMAP.with_extremes(bad=_MISSING)
    ax.imshow(np.ma.masked_invalid(values), cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest")
    annotate = rows <= _ANNOTATE_MAX_ROWS
    for r, e in enumerate(episodes):
        for c, cell in enumerate(e.cells):
            if cell.human is not None:
                ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=2.2))
            if annotate:
                ax.text(
                    c,
                    r,
                    _cell_text(cell.judge, cell.effective, cell.human is not None),
                    ha="center",
                    va="center",
                    fontsize=8,
                )
    ax.set_xticks(range(cols), [f"{cid}\n{name}" for cid, name in policy.criteria], fontsize=8)
    labels = [f"{e.label(with_dataset)}  ({_fmt(e.total(View.EFFECTIVE))})" for e in episodes]
    step = 1 if annotate else -(-rows // 40)  # many episodes: label every step-th row
    ax.set_yticks(range(0, rows, step), labels[::step], fontsize=7)
    ax.tick_params(axis="x", top=True, labeltop=True, bottom=False, labelbottom=False)
    title = f"{policy.name}: score per episode (total)\n{view_label(policy, View.EFFECTIVE)}"
    ax.set_title(title, fontsize=10, pad=24)
    kind = scorer_kind(policy).value
    fig.legend(
        handles=[
            Patch(facecolor="white", edgecolor="black", linewidth=2, label=f"person override: {kind}→person"),
            Patch(facecolor=_MISSING, label="no score"),
        ],
        loc="lower center",
        fontsize=7,
        ncol=2,
        frameon=False,
    )
    fig.subplots_adjust(left=0.32, right=0.97, top=1 - 1.1 / fig.get_figheight(), bottom=0.45 / fig.get_figheight())
    return fig


def criteria_figure(report: Report) -> Figure:
    """Per-criterion means (t-intervals) and success rates (Wilson), the scorer's beside the effective ones.

    Where episodes carry virtual ground truth, its mean per criterion marks each policy's mean bars.
    """
    criteria = report.criteria
    labels = _view_labels(report)
    fig = Figure(figsize=(4.5 + 1.5 * len(criteria) * max(1, len(report.policies) / 2), 7.0), dpi=DPI)
    axes = fig.subplots(2, 2, sharey="row")
    for col, view in enumerate(View):
        mean_sets = [[c.mean for c in p.view(view).criteria] for p in report.policies]
        rate_sets = [[c.success.estimate for c in p.view(view).criteria] for p in report.policies]
        _grouped_bars(axes[0][col], [cid for cid, _ in criteria], mean_sets, _names(report))
        _grouped_bars(axes[1][col], [cid for cid, _ in criteria], rate_sets, _names(report))
        _truth_markers(axes[0][col], report)
        axes[0][col].set_title(f"criterion mean\n{labels[view]}", fontsize=9)
        axes[1][col].set_title(f"criterion success (score = 1)\n{labels[view]}", fontsize=9)
    axes[0][0].set_ylabel("mean score (95 % t-interval)")
    axes[1][0].set_ylabel("success rate (95 % Wilson)")
    for ax in axes.flat:
        ax.set_ylim(0, 1.08)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 4), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


def comparison_figure(report: Report) -> Figure:
    """Mean total reward and episode success rates per policy, the scorer's (hatched) beside the effective ones."""
    names = _names(report)
    labels = _view_labels(report)
    fig = Figure(figsize=(5.0 + 2.2 * len(names), 5.0), dpi=DPI)
    left, right = fig.subplots(1, 2)
    totals = [[p.view(v).total_t for p in report.policies] for v in View]
    _grouped_bars(left, names, totals, [labels[v] for v in View], hatched=(True, False))
    left.set_ylim(0, float(len(report.criteria)) * 1.05)
    left.set_ylabel("mean total reward (95 % t-interval)")
    left.set_title("mean total reward", fontsize=10)
    left.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=2, frameon=False)
    rates = [[p.view(v).partial_success.estimate for p in report.policies] for v in View]
    rates += [[p.view(v).full_success.estimate for p in report.policies] for v in View]
    series = [f"partial, {labels[v]}" for v in View] + [f"full, {labels[v]}" for v in View]
    _grouped_bars(right, names, rates, series, hatched=(True, False, True, False), colors=("C2", "C2", "C3", "C3"))
    right.set_ylim(0, 1.08)
    right.set_ylabel("episode success rate (95 % Wilson)")
    right.set_title("partial (total > 0) and full (all = 1) success", fontsize=10)
    right.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=2, frameon=False)
    fig.tight_layout()
    return fig


def _grouped_bars(
    ax: Axes,
    groups: Sequence[str],
    series: Sequence[Sequence[Estimate]],
    labels: Sequence[str],
    hatched: Sequence[bool] = (),
    colors: Sequence[str] = (),
) -> None:
    """One bar per (series, group) with asymmetric interval whiskers; series side by side within a group.

    Hatched series are drawn light with diagonal lines (the scorer's figures beside the effective ones).
    """
    width = 0.8 / max(1, len(series))
    x = np.arange(len(groups))
    for i, (estimates, label) in enumerate(zip(series, labels, strict=True)):
        heights = [e.value or 0.0 for e in estimates]
        lows = [0.0 if e.low is None or e.value is None else max(0.0, e.value - e.low) for e in estimates]
        highs = [0.0 if e.high is None or e.value is None else max(0.0, e.high - e.value) for e in estimates]
        offset = (i - (len(series) - 1) / 2) * width
        hatch = i < len(hatched) and hatched[i]
        color = colors[i] if i < len(colors) else f"C{i}"
        ax.bar(
            x + offset,
            heights,
            width * 0.95,
            yerr=[lows, highs],
            capsize=3,
            label=label,
            color=color,
            alpha=0.45 if hatch else 1.0,
            hatch="//" if hatch else None,
            edgecolor="black",
            linewidth=0.5,
        )
    ax.set_xticks(x, groups)
    ax.grid(axis="y", alpha=0.3)


def _truth_markers(ax: Axes, report: Report) -> None:
    """Each policy's mean virtual ground truth per criterion: a black diamond over its bar (none without truth)."""
    n = len(report.policies)
    width = 0.8 / max(1, n)  # as _grouped_bars places one series per policy
    labelled = False
    for i, p in enumerate(report.policies):
        means = dict(p.truth.means) if p.truth is not None else {}
        points = [(x, m) for x, (cid, _) in enumerate(report.criteria) if (m := means.get(cid)) is not None]
        if not points:
            continue
        xs = [x + (i - (n - 1) / 2) * width for x, _ in points]
        label = None if labelled else f"{TRUTH_LABEL} (mean)"
        ax.scatter(xs, [m for _, m in points], marker="D", color="black", s=28, zorder=3, label=label)
        labelled = True


def _view_labels(report: Report) -> dict[View, str]:
    policies = [p.scores for p in report.policies]
    return {v: column_label(policies, v) for v in View}


def _names(report: Report) -> list[str]:
    return [p.scores.name for p in report.policies]


def _cell_text(judge: float | None, effective: float | None, overridden: bool) -> str:
    if overridden:
        return f"{_fmt(judge)}→{_fmt(effective)}"
    return _fmt(effective)


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:g}"


def _png(fig: Figure) -> bytes:
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})  # no URL or version in the file
    return buf.getvalue()
