"""Report files: plots are real, non-blank PNGs; the HTML page is self-contained and escapes text; Markdown and JSON."""

import base64
import io
import json
from html.parser import HTMLParser

import numpy as np
import pytest
from PIL import Image

from evaluation.report.config import StatsConfig
from evaluation.report.markdown import escape_markdown
from evaluation.report.model import build_report
from evaluation.report.output import write_report
from evaluation.report.plots import heatmap_png, render_plots
from tests.evaluation.report.report_testkit import policy_scores

HOSTILE = '<img src=x onerror="alert(1)"> | `x` & co'  # a policy name that must stay text everywhere
SMOLVLA = policy_scores(
    HOSTILE,
    [(1, 1, 0.5), (1, 1, 1), (1, 0.5, 0), (1, 1, 0), (0.5, 0, 0), (1, 1, 1), (1, 1, 0.5)],
    humans={(2, "R3"): 1.0, (3, "R3"): 0.5},
)
ACT = policy_scores("act", [(0, 0, 0), (0.5, 0, 0), (1, 0.5, 0), (0, 0, 0), (0.5, 0.5, None)])


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    report = build_report([SMOLVLA, ACT], StatsConfig(bootstrap_resamples=1000), "Fold: SmolVLA <vs> ACT")
    plots = render_plots(report)
    return report, plots, write_report(report, plots, tmp_path_factory.mktemp("report"))


def _image(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as im:
        assert im.format == "PNG"
        return np.asarray(im.convert("RGB"))


def test_every_plot_is_a_non_blank_png(written):
    _, plots, files = written
    assert sorted(plots) == ["comparison.png", "criteria.png", "heatmap-1.png", "heatmap-2.png"]
    assert sorted(p.name for p in files.plots) == sorted(plots)
    for path in files.plots:
        pixels = _image(path.read_bytes())
        height, width, _ = pixels.shape
        assert width >= 300, path.name
        assert height >= 200, path.name
        assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 20, f"{path.name} looks blank"
        assert (pixels < 128).any(), path.name  # dark marks ...
        assert (pixels > 200).any(), path.name  # ... on a light ground


def test_the_heatmap_marks_overridden_cells():
    plain = policy_scores("p", [(1, 1, 0), (0, 0.5, 1)])
    marked = policy_scores("p", [(1, 1, 0), (0, 0.5, 1)], humans={(0, "R3"): 1.0})
    a, b = _image(heatmap_png(plain)), _image(heatmap_png(marked))
    assert a.shape == b.shape
    assert (a != b).any()
    tall = _image(heatmap_png(policy_scores("p", [(1, 1, 0)] * 40)))
    assert tall.shape[0] > a.shape[0]  # one row per episode


class _Refs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.refs: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.refs.extend(v or "" for k, v in attrs if k in ("src", "href", "srcset", "action", "data", "poster"))


def test_html_is_self_contained(written):
    _, plots, files = written
    page = files.html.read_text(encoding="utf-8")
    for outside in ("http://", "https://", "@import", "url("):
        assert outside not in page, outside
    parser = _Refs()
    parser.feed(page)
    assert "script" not in parser.tags
    images = [r for r in parser.refs if r.startswith("data:image/png;base64,")]
    assert len(images) == len(plots)
    assert all(r.startswith("data:") for r in parser.refs)
    for ref in images:
        _image(base64.b64decode(ref.split(",", 1)[1]))


def test_html_escapes_every_text(written):
    page = written[2].html.read_text(encoding="utf-8")
    assert "<img src=x" not in page
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page
    assert "Fold: SmolVLA &lt;vs&gt; ACT" in page


def test_markdown_has_the_tables_and_escapes_names(written):
    md = written[2].markdown.read_text(encoding="utf-8")
    assert "<img" not in md
    assert escape_markdown(HOSTILE) in md
    assert "\\|" in escape_markdown(HOSTILE)
    assert "## Mean total reward and success rates" in md
    assert "](plots/heatmap-2.png)" in md
    act = "| act | effective (judge + 0 person overrides) |"
    headline = [line for line in md.splitlines() if line.startswith(act)]
    # Totals 0, 0.5, 1.5, 0: mean 0.5, sd 0.7071, t(0.975, 3) = 3.1824 -> 0.5 ± 1.125, clipped at 0.
    assert len(headline) == 1
    assert headline[0].startswith(f"{act} 4 | 0.50 [0.00, 1.63] | 0.50 [")
    assert headline[0].endswith("| 2/4 50 % [15, 85] | 0/4 0 % [0, 49] |")


def test_json_holds_the_figures(written):
    doc = json.loads(written[2].json.read_text(encoding="utf-8"))
    assert doc["format"] == 2
    assert [p["name"] for p in doc["policies"]] == [HOSTILE, "act"]
    act = doc["policies"][1]
    assert act["n"] == 5
    assert act["unadjusted"]["mean_total_t"]["n"] == 4  # one episode lacks an R3 label
    assert act["unadjusted"]["mean_total_t"]["clipped"] is True  # 0.5 ± 1.125 on a 0..3 scale
    assert act["unadjusted"]["full_success_rate"] == {
        "successes": 0,
        "value": 0.0,
        "low": 0.0,
        "high": pytest.approx(0.49, abs=0.01),
        "n": 4,
        "method": "wilson",
        "clipped": False,
    }
    assert doc["comparisons"][0]["total"]["permutation"]["exact"] is True
    assert "partial success" in doc["definitions"]
