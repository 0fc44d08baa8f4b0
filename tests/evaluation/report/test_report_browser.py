"""The HTML report in a real browser (Debian's headless Chromium, Playwright): no console error, every image loads."""

import pytest

from evaluation.report.config import StatsConfig
from evaluation.report.model import build_report
from evaluation.report.output import write_report
from evaluation.report.plots import render_plots
from tests.evaluation.report.report_testkit import policy_scores

pytestmark = pytest.mark.slow


def test_the_report_opens_without_console_errors_and_every_image_loads(tmp_path, browser):
    smolvla = policy_scores("SmolVLA <b>v2</b>", [(1, 1, 0.5), (1, 1, 1), (1, 0.5, 0)], humans={(2, "R3"): 1.0})
    act = policy_scores("ACT", [(0, 0, 0), (0.5, 0, 0), (1, 0.5, 0)])
    report = build_report([smolvla, act], StatsConfig(bootstrap_resamples=500), "Browser check")
    files = write_report(report, render_plots(report), tmp_path / "out")
    errors: list[str] = []
    requests: list[str] = []
    page = browser.new_page()  # the session's Chromium (tests/evaluation/conftest.py)
    try:
        page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
        page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(files.html.resolve().as_uri(), wait_until="load", timeout=60_000)
        images = page.eval_on_selector_all(
            "img", "els => els.map(e => ({complete: e.complete, width: e.naturalWidth, height: e.naturalHeight}))"
        )
        title = page.title()
        heading = page.inner_text("h1")
        cell = page.inner_text("#policies + table")
    finally:
        page.close()
    assert errors == []
    assert [u for u in requests if not u.startswith(("file:", "data:"))] == []  # nothing leaves the file
    assert len(images) == 4
    assert all(i["complete"] and i["width"] > 0 and i["height"] > 0 for i in images), images
    assert (title, heading) == ("Browser check", "Browser check")
    assert "SmolVLA <b>v2</b>" in cell  # markup in a name is shown as text
