"""Write a report folder: report.html (self-contained), report.md, report.json and plots/*.png.

Files are written to a temporary name and renamed, so a reader never sees half a file and an
interrupted run leaves the previous report intact.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evaluation.report.errors import ReportError
from evaluation.report.html_page import render_html
from evaluation.report.markdown import PLOTS_DIR, render_markdown
from evaluation.report.model import Report


@dataclass(frozen=True)
class ReportFiles:
    """Where the report went."""

    html: Path  # self-contained page
    markdown: Path  # Markdown with linked plots
    json: Path  # every figure as data
    plots: tuple[Path, ...]  # PNG files


def write_report(report: Report, plots: dict[str, bytes], out_dir: Path) -> ReportFiles:
    """Write every file of a report.

    Raises:
        ReportError: The folder cannot be created or written.
    """
    try:
        plot_dir = out_dir / PLOTS_DIR
        plot_dir.mkdir(parents=True, exist_ok=True)
        plot_paths = tuple(_write(plot_dir / name, data) for name, data in plots.items())
        html = _write(out_dir / "report.html", render_html(report, plots).encode("utf-8"))
        markdown = _write(out_dir / "report.md", render_markdown(report).encode("utf-8"))
        doc = json.dumps(report.to_dict(), indent=2, ensure_ascii=False, allow_nan=False, default=_plain)
        json_path = _write(out_dir / "report.json", doc.encode("utf-8"))
    except OSError as e:
        raise ReportError(f"cannot write the report to {out_dir}: {e}; pass another --output_dir") from e
    return ReportFiles(html, markdown, json_path, plot_paths)


def _plain(value: object) -> object:
    """Convert numpy scalars to Python numbers (anything else is a bug: raise)."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _write(path: Path, data: bytes) -> Path:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return path
