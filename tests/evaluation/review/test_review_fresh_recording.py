"""A fresh recording is browsable before any judging: so101-record on the virtual rig, then so101-review.

Five episodes recorded through the real command, then so101-review started through its entry point
with no store beside the dataset, and the pages read in headless Chromium: every episode listed
with its duration, task and quality card, and the joint traces under the videos with a cursor that
follows the players and a click that moves them.
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from evaluation.store import default_store_path
from tests.support.review_pages import PageProblems
from tests.support.review_server import ReviewProcess

pytestmark = pytest.mark.slow
EPISODES = 5  # tests/conftest.py's FRESH_EPISODES
TIMEOUT_MS = 60_000  # a loaded machine decodes slowly
SCREENSHOT = os.environ.get("SO101_REVIEW_SCREENSHOT", "")  # a PNG of the episode page, for a person to look at


@pytest.fixture(scope="module")
def recording(fresh_recording: Path) -> Path:
    """Five short episodes recorded on the virtual rig by so101-record (never judged): tests/conftest.py's."""
    return fresh_recording


@pytest.fixture(scope="module")
def served(recording: Path) -> Iterator[tuple[str, str]]:
    """(base URL, what so101-review printed) for so101-review over the fresh recording, stopped after."""
    assert not default_store_path(recording).exists()
    review = ReviewProcess(f"--dataset.root={recording}", "--server.port=0", "--reviewer=ana")
    try:
        yield review.url().rstrip("/"), " ".join(review.output.split())
    finally:
        review.proc.send_signal(signal.SIGINT)
        assert review.proc.wait(timeout=60) == 0, review.output
        review.reader.join(timeout=10)


def _frame(page: Page) -> int:
    return int(page.locator("#frame-label").get_attribute("data-frame") or -1)


def test_the_command_starts_a_store_for_an_unjudged_dataset(served, recording: Path):
    _, out = served
    assert f"starting one at {default_store_path(recording)}" in out
    assert f"{EPISODES} episodes, 0 judged" in out
    assert default_store_path(recording).is_file()


def test_every_episode_is_listed_with_its_duration_task_and_quality_card(browser: Browser, served):
    url, _ = served
    problems = PageProblems()
    page = problems.watch(browser.new_page())
    page.goto(f"{url}/")
    rows = page.locator("#episodes tbody tr")
    assert rows.count() == EPISODES
    for index in range(EPISODES):
        row = page.locator(f"#episode-{index}")
        assert re.fullmatch(r"1\.\d s", row.locator("td.duration").inner_text())
        assert row.locator("td.task").inner_text() == "Fold the cloth"
        quality = row.locator("td.quality")
        assert re.match(r"\d+\.\d · ", quality.inner_text()), quality.inner_text()  # the card's achieved fps first
        assert quality.get_attribute("data-verdict") in ("keep", "keep (marked)")
        assert "not scored" in row.locator("td.flags").inner_text()
    page.select_option("select[name=scored]", "no")
    with page.expect_navigation():  # counting before the filtered page has loaded reads a half-parsed table
        page.click("button[type=submit]")
    assert page.locator("#episodes tbody tr").count() == EPISODES
    page.select_option("select[name=verdict]", "no card")
    with page.expect_navigation():
        page.click("button[type=submit]")
    assert page.locator("#episodes tbody tr").inner_text() == "No episode matches these filters."
    assert problems.errors == []
    page.close()


def test_the_traces_lie_under_the_videos_and_follow_them(browser: Browser, served):
    url, _ = served
    problems = PageProblems()
    page = problems.watch(browser.new_page())
    page.goto(f"{url}/episodes/2")
    page.wait_for_function("() => document.getElementById('traces').dataset.ready === '1'", timeout=TIMEOUT_MS)
    assert page.locator("#trace-left").count() == 1
    assert page.locator("#trace-right").count() == 1
    videos_bottom = page.evaluate("() => document.querySelector('.videos').getBoundingClientRect().bottom")
    traces_top = page.evaluate("() => document.getElementById('trace-left').getBoundingClientRect().top")
    assert traces_top >= videos_bottom  # under the videos
    assert "idle span(s)" in page.locator("#trace-status").inner_text()

    page.wait_for_function("() => document.getElementById('video-overhead').readyState >= 1", timeout=TIMEOUT_MS)
    for _ in range(3):
        page.keyboard.press(".")
    page.wait_for_function("() => document.getElementById('frame-label').dataset.frame === '3'", timeout=TIMEOUT_MS)
    assert page.locator("#trace-left").get_attribute("data-cursor") == "3"  # the cursor follows the players

    box = page.locator("#trace-right").bounding_box()
    page.locator("#trace-right").click(position={"x": box["width"] * 0.75, "y": box["height"] / 2})  # scrolled to
    if SCREENSHOT:
        page.screenshot(path=SCREENSHOT, full_page=True)
    page.wait_for_function(
        "() => parseInt(document.getElementById('frame-label').dataset.frame) > 20", timeout=TIMEOUT_MS
    )
    frame = _frame(page)
    assert page.locator("#trace-left").get_attribute("data-cursor") == str(frame)  # a click moved the players
    page.locator("#scrubber").fill("10")  # the scrubber moves them too (it once snapped back to the shown frame)
    page.wait_for_function("() => document.getElementById('frame-label').dataset.frame === '10'", timeout=TIMEOUT_MS)
    assert page.locator("#trace-right").get_attribute("data-cursor") == "10"
    assert problems.errors == []
    page.close()
