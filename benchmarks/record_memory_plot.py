"""A figure of `record_writer`'s memory over each run: summed PSS against time, ours beside LeRobot's.

One panel per codec, one line per run, so a reader sees at a glance whether either recorder's
memory climbs from episode to episode (a leak a 3-episode peak would hide) or only steps up at the
first save and stays flat. Drawn on matplotlib's Agg canvas (no pyplot, no display).
"""

from __future__ import annotations

import io
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

COLOURS = {"ours": "#1f77b4", "lerobot": "#ff7f0e"}
LABELS = {"ours": "ours (so101-record)", "lerobot": "LeRobot (streaming encoding in the loop)"}


def memory_png(results: list[dict]) -> bytes:
    """PNG bytes: for each codec, every run's `pss_series` (seconds since its first episode, MB), with
    dotted lines where the first run's later episodes began."""
    codecs = list(dict.fromkeys(r["vcodec"] for r in results))
    fig = Figure(figsize=(9.0, 3.2 * len(codecs)), dpi=100)
    FigureCanvasAgg(fig)
    for row, vcodec in enumerate(codecs):
        ax = fig.add_subplot(len(codecs), 1, row + 1)
        labelled: set[str] = set()
        for r in (r for r in results if r["vcodec"] == vcodec and r.get("pss_series")):
            times, mbs = zip(*r["pss_series"], strict=True)
            label = None if r["impl"] in labelled else LABELS.get(r["impl"], r["impl"])
            labelled.add(r["impl"])
            ax.plot(times, mbs, color=COLOURS.get(r["impl"], "grey"), linewidth=1.0, alpha=0.8, label=label)
        first = next(r for r in results if r["vcodec"] == vcodec)
        # Episode starts of the first run (every run keeps the same schedule, give or take its saves).
        for start_s, _ in first.get("episode_spans_s", [])[1:]:
            ax.axvline(start_s, color="grey", linestyle=":", linewidth=0.8)
        episodes, seconds = first.get("episodes", "?"), first.get("seconds", "?")
        ax.set_title(f"{vcodec}: {episodes} episodes of {seconds} s, 3 cameras 480x640 at 30 Hz", fontsize=10)
        ax.set_xlabel("seconds since the first episode began")
        ax.set_ylabel("summed PSS, MB")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def write_memory_png(results: list[dict], path: Path) -> Path:
    """Write `memory_png(results)` to `path` (its folder is made); returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(memory_png(results))
    return path
