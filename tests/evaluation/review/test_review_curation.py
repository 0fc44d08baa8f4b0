"""Curation on the review page, in headless Chromium: drop marks, a trim at the cursor, preview, write.

The page's marks are saved beside the dataset and written by so101-edit, which the page runs with
the options it shows; so101-edit run by hand with those options writes the same dataset, file for
file, and the dataset reviewed is never changed.
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from evaluation.review.curation import draft_path
from teleop.dataset.sidecar import check_all
from tests.support.commands import run
from tests.support.review_pages import PageProblems
from tests.support.review_server import serving
from tests.teleop.dataset.helpers import snapshot

pytestmark = pytest.mark.slow
STATS = "meta/stats.json"
TIMEOUT_MS = 120_000  # a loaded machine decodes and encodes slowly
WRITE_TIMEOUT_MS = 600_000  # re-encoding three episodes: seconds on a quiet machine, minutes on a loaded one


@pytest.fixture
def dataset(fresh_recording: Path, tmp_path: Path) -> Path:
    root = tmp_path / "fold"
    shutil.copytree(fresh_recording, root)
    return root


def test_marks_on_the_page_write_the_dataset_so101_edit_writes_for_them(browser: Browser, dataset: Path, tmp_path):
    before = snapshot(dataset)
    from_page = tmp_path / "from_page"
    problems = PageProblems()
    with serving(dataset, tmp_path / "store.sqlite") as server:
        page = problems.watch(browser.new_page())
        page.set_default_timeout(TIMEOUT_MS)  # the preview runs so101-edit (LeRobot loads: seconds, more when busy)
        # The list: tick two episodes to drop, name the new folder, save.
        page.goto(f"{server.url}/")
        for index in (1, 3):
            page.locator(f"#episode-{index} td.curate input[name=drop]").check()
        page.locator("#curate input[name=output_root]").fill(str(from_page))
        page.locator("#curate button[value=save]").click()
        page.wait_for_url(f"{server.url}/?*")
        assert page.locator("#episode-1 td.curate input").is_checked()
        assert not page.locator("#episode-2 td.curate input").is_checked()
        # An episode: move the players to frame 10, start the span there, end it 5 frames before the end.
        page.goto(f"{server.url}/episodes/2")
        page.wait_for_function("() => document.getElementById('traces').dataset.ready === '1'", timeout=TIMEOUT_MS)
        length = int(page.locator("#scrubber").get_attribute("max")) + 1
        page.locator("#scrubber").fill("10")
        page.wait_for_function(
            "() => document.getElementById('frame-label').dataset.frame === '10'", timeout=TIMEOUT_MS
        )
        page.locator("#trim-start-here").click()
        assert page.locator("#trim-start").input_value() == "10"
        page.locator("#trim-stop").fill(str(length - 5))
        page.locator("#trim-stop").dispatch_event("input")
        assert page.locator("#trace-left").get_attribute("data-trim") == f"10:{length - 5}"  # shaded on the traces
        page.locator("#trim button[value=save]").click()
        page.wait_for_url(f"{server.url}/episodes/2*")
        assert f"marked: frames 10:{length - 5} kept" in page.locator("#trim-state").inner_text()
        # The curation page: the command it stands for, a preview, then the write.
        page.goto(f"{server.url}/curation")
        command = page.locator("#command").inner_text()
        assert "--drop=1,3" in command
        assert f"--trim=2:10:{length - 5}" in command
        page.locator("#write button[value=preview]").click()
        assert "3 of 5 episodes kept" in page.locator("#preview pre").inner_text()
        assert not from_page.exists()
        page.locator("#write button[value=write]").click()
        page.wait_for_selector("#job[data-state=done], #job[data-state=failed]", timeout=WRITE_TIMEOUT_MS)
        assert page.locator("#job").get_attribute("data-state") == "done", page.locator("#job pre").inner_text()
        assert f"wrote {from_page}: 3 episodes" in page.locator("#job pre").inner_text()
    assert problems.errors == []
    assert draft_path(dataset).is_file()  # the marks outlive the server
    # so101-edit by hand, with the options the page showed, into another folder: the same dataset.
    from_cli = tmp_path / "from_cli"
    args = [a.replace(str(from_page), str(from_cli)) for a in shlex.split(command)[1:]]
    result = run("so101-edit", *args, timeout_s=300)
    assert result.returncode == 0, result.stderr[-3000:]
    # File for file; LeRobot writes meta/stats.json's keys in set order, which differs between processes.
    page_files, cli_files = snapshot(from_page), snapshot(from_cli)
    assert set(page_files) == set(cli_files)
    assert {k: v for k, v in page_files.items() if k != STATS} == {k: v for k, v in cli_files.items() if k != STATS}
    assert json.loads((from_page / STATS).read_text()) == json.loads((from_cli / STATS).read_text())
    assert [c.status for c in check_all(from_page)] == ["ok"] * 3
    assert snapshot(dataset) == before
