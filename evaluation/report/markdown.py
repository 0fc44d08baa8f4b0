"""The Markdown report: the same tables as the HTML page, plots linked as files in `plots/`.

Cell text is escaped for Markdown tables (pipes, backslashes, newlines, and "<" so no tag opens), so names
cannot break the table or inject HTML into renderers that allow it.
"""

from __future__ import annotations

from evaluation.report.model import DEFINITIONS, Report
from evaluation.report.plots import COMPARISON_PNG, CRITERIA_PNG, heatmap_name
from evaluation.report.tables import TextTable, all_tables, episodes_table

PLOTS_DIR = "plots"  # folder of the PNG files, relative to the report files


def render_markdown(report: Report) -> str:
    """The whole Markdown document."""
    e = escape_markdown
    lines = [
        f"# {e(report.title)}",
        "",
        f"Created {e(report.created_at)}; 95 % intervals; seed {report.stats.seed}; criteria "
        f"{e(', '.join(f'{c} {n}' for c, n in report.criteria))}.",
        "",
    ]
    if report.caveats:
        lines += ["**Read with care**", "", *[f"- {e(c)}" for c in report.caveats], ""]
    tables = all_tables(report)
    for t in tables[:2]:
        lines += _table(t)
    lines += [f"![mean total reward and episode success]({PLOTS_DIR}/{COMPARISON_PNG})", ""]
    lines += _table(tables[2])
    lines += [f"![per-criterion means and success rates]({PLOTS_DIR}/{CRITERIA_PNG})", ""]
    for t in tables[3:]:
        lines += _table(t)
    for i, p in enumerate(report.policies):
        lines += [f"![per-episode scores of {e(p.scores.name)}]({PLOTS_DIR}/{heatmap_name(i)})", ""]
        lines += _table(episodes_table(p))
    lines += ["## Definitions", ""]
    lines += [f"- **{e(term)}**: {e(text)}" for term, text in DEFINITIONS]
    return "\n".join(lines) + "\n"


def escape_markdown(text: object) -> str:
    """Text safe inside a Markdown table cell or line."""
    out = str(text).replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;")
    return " ".join(out.splitlines())


def _table(t: TextTable) -> list[str]:
    e = escape_markdown
    lines = [f"## {e(t.title)}", "", "| " + " | ".join(e(h) for h in t.headers) + " |"]
    lines.append("|" + "---|" * len(t.headers))
    lines += ["| " + " | ".join(e(c) for c in row) + " |" for row in t.rows]
    if t.note:
        lines += ["", f"_{e(t.note)}_"]
    return [*lines, ""]
