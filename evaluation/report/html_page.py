"""The self-contained HTML report: inline CSS, plots as base64 PNG data URIs, no script, no external reference.

Every piece of text (policy names, tags, reviewer names, reasons) is HTML-escaped, so a name with
markup in it shows as text. The page opens from disk or an e-mail attachment exactly as written.
"""

from __future__ import annotations

import base64
import html

from evaluation.report.model import DEFINITIONS, Report
from evaluation.report.plots import COMPARISON_PNG, CRITERIA_PNG, heatmap_name
from evaluation.report.tables import TextTable, all_tables, episodes_table

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:1200px;padding:0 1rem;
color:#222;line-height:1.4}
h1{font-size:1.6rem}h2{font-size:1.25rem;margin-top:2rem;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5rem 0;font-size:.85rem}
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f3f3f3}tr:nth-child(even) td{background:#fafafa}
.note{color:#555;font-size:.8rem}.caveat{background:#fff8e1;border-left:4px solid #f0b400;padding:.5rem 1rem}
figure{margin:1rem 0}img{max-width:100%;height:auto;border:1px solid #eee}
dt{font-weight:600}dd{margin:0 0 .5rem 1rem}
"""


def render_html(report: Report, plots: dict[str, bytes]) -> str:
    """The whole page.

    Args:
        report: The computed report.
        plots: PNG bytes by file name (e.g. "comparison.png"), in page order.
    """
    e = _esc
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<link rel="icon" href="data:,">',  # no favicon request
        f"<title>{e(report.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{e(report.title)}</h1>",
        f'<p class="note">created {e(report.created_at)}; 95 % intervals; seed {report.stats.seed}; criteria '
        f"{e(', '.join(f'{c} {n}' for c, n in report.criteria))}</p>",
    ]
    if report.caveats:
        items = "".join(f"<li>{e(c)}</li>" for c in report.caveats)
        parts.append(f'<div class="caveat"><strong>Read with care</strong><ul>{items}</ul></div>')
    tables = all_tables(report)
    parts.extend(_table(t) for t in tables[:2])
    parts.append(_figure(plots, COMPARISON_PNG, "Mean total reward and episode success per policy"))
    parts.append(_table(tables[2]))
    parts.append(_figure(plots, CRITERIA_PNG, "Per-criterion means and success rates"))
    parts.extend(_table(t) for t in tables[3:])
    for i, p in enumerate(report.policies):
        parts.append(_figure(plots, heatmap_name(i), f"Per-episode scores of {p.scores.name}"))
        parts.append(_table(episodes_table(p)))
    parts.append("<h2>Definitions</h2><dl>")
    parts.extend(f"<dt>{e(term)}</dt><dd>{e(text)}</dd>" for term, text in DEFINITIONS)
    parts.append("</dl></body></html>")
    return "\n".join(parts) + "\n"


def _table(t: TextTable) -> str:
    e = _esc
    head = "".join(f"<th>{e(h)}</th>" for h in t.headers)
    body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in t.rows)
    note = f'<p class="note">{e(t.note)}</p>' if t.note else ""
    anchor = e("".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in t.key))
    return (
        f'<h2 id="{anchor}">{e(t.title)}</h2><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{note}'
    )


def _figure(plots: dict[str, bytes], name: str, caption: str) -> str:
    data = plots.get(name)
    if data is None:
        return ""
    uri = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
    return f'<figure><img src="{uri}" alt="{_esc(caption)}"><figcaption>{_esc(caption)}</figcaption></figure>'


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)
