"""The review page in headless Chromium: synced videos at the episode's offset, play, frame steps, an override.

Every video frame of the synthetic dataset carries its (episode, frame, view) as a binary code, so the
test reads back exactly which frame each player shows (through a canvas), not only `currentTime`.
"""

from __future__ import annotations

import shutil
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
from playwright.sync_api import Browser, Page

from evaluation.overrides import overrides_of
from evaluation.store import EvaluationStore
from evaluation.testing.synthetic_dataset import decode_code
from robot.joints import CAMERA_ROLES
from tests.support.judged_store import judge_tables
from tests.support.review_pages import PageProblems
from tests.support.review_server import serving

EPISODE = 3  # starts 9 s into the shared MP4 files: the players must honour the offset
TIMEOUT_MS = 60_000  # generous: a loaded CI machine decodes slowly

_READ_FRAMES = """() => Array.from(document.querySelectorAll('video[data-view]')).map((v) => {
  const c = document.createElement('canvas');
  c.width = v.videoWidth; c.height = v.videoHeight;
  const g = c.getContext('2d');
  g.drawImage(v, 0, 0);
  return [v.dataset.view, c.width, c.height, Array.from(g.getImageData(0, 0, c.width, 16).data)];
})"""
_SETTLED = """() => Array.from(document.querySelectorAll('video[data-view]'))
  .every((v) => v.readyState >= 2 && !v.seeking)"""


def _shown(page: Page) -> dict[str, tuple[int, int, int]]:
    """(episode, frame, view index) that each video element shows now."""
    page.wait_for_function(_SETTLED, timeout=TIMEOUT_MS)
    shown = {}
    for view, width, height, data in page.evaluate(_READ_FRAMES):
        image = np.zeros((height, width, 3), dtype=np.uint8)
        image[:16] = np.asarray(data, dtype=np.uint8).reshape(16, width, 4)[..., :3]
        shown[view] = decode_code(image)
    return shown


def _frame_label(page: Page) -> int:
    return int(page.locator("#frame-label").get_attribute("data-frame") or -1)


def _expect_frame(page: Page, frame: int) -> None:
    page.wait_for_function(
        f"() => document.getElementById('frame-label').dataset.frame === '{frame}'", timeout=TIMEOUT_MS
    )
    assert _shown(page) == {view: (EPISODE, frame, i) for i, view in enumerate(CAMERA_ROLES)}


@pytest.mark.slow
def test_play_step_override_reload(browser: Browser, review_server, judged_store: Path):
    before = judge_tables(judged_store)
    problems = PageProblems()
    page = problems.watch(browser.new_page())
    page.goto(f"{review_server.url}/")
    assert page.locator(f"#episode-{EPISODE} td[data-criterion=R3] .judge").inner_text() == "0"
    page.click(f"#episode-{EPISODE} a")
    page.wait_for_url(f"**/episodes/{EPISODE}")
    _expect_frame(page, 0)  # positioned at the episode's start inside the shared file
    assert page.evaluate("() => document.getElementById('video-overhead').currentTime") == pytest.approx(9.0, abs=0.03)

    page.keyboard.press(" ")  # play
    page.wait_for_function(
        "() => parseInt(document.getElementById('frame-label').dataset.frame) >= 12", timeout=TIMEOUT_MS
    )
    page.keyboard.press(" ")  # pause: every view snaps to the same frame
    paused = _frame_label(page)
    assert 12 <= paused < 89
    _expect_frame(page, paused)

    page.keyboard.press(".")
    page.keyboard.press(".")
    page.keyboard.press(",")
    _expect_frame(page, paused + 1)
    page.click("#step-fwd")
    _expect_frame(page, paused + 2)

    page.click("#criterion-R3 h2")  # select R3
    page.keyboard.press("1")  # score shortcut
    assert page.locator("#override-R3 input[name=score][value='1']").is_checked()
    page.select_option("#override-R3 select[name=reason]", "view_ambiguous")
    page.fill("#override-R3 textarea[name=note]", "push visible in the right wrist view")
    page.keyboard.press("Escape")
    with page.expect_navigation():
        page.keyboard.press("s")  # save shortcut
    assert page.url.endswith("#criterion-R3")
    page.reload()
    _expect_frame(page, paused + 2)  # the video position survives the post and the reload
    effective = page.locator("#criterion-R3 .effective-score")
    assert (effective.inner_text(), effective.get_attribute("data-source")) == ("1", "override")
    assert page.locator("#criterion-R3 .judge-score").inner_text() == "0"
    entries = page.locator("#trail-R3 tr.trail-entry")
    assert entries.count() == 1
    assert [entries.locator(f"td.{c}").inner_text() for c in ("old", "new", "reason", "note")] == [
        "0",
        "1",
        "view_ambiguous",
        "push visible in the right wrist view",
    ]
    assert "tester" in entries.inner_text()  # the server's reviewer (the form never names one that counts)
    assert page.locator("#effective-total").inner_text() == "3"
    page.keyboard.press("j")  # next episode
    page.wait_for_url(f"**/episodes/{EPISODE + 1}")

    page.goto(f"{review_server.url}/")
    assert page.locator(f"#episode-{EPISODE} td[data-criterion=R3] .effective").inner_text() == "1"
    assert page.locator(f"#episode-{EPISODE} td.status").inner_text() == "partial"
    assert problems.errors == []
    page.close()

    with EvaluationStore(judged_store) as store:
        history = overrides_of(store, "fold_virtual")
        judge_r3 = store.query(
            "SELECT s.score FROM latest_episode_results r JOIN scores s ON s.result_id = r.id"
            " WHERE r.episode_index = ? AND s.criterion = 'R3'",
            (EPISODE,),
        )[0]["score"]
    assert [(o.episode_index, o.criterion, o.old_score, o.new_score, o.reason, o.reviewer) for o in history] == [
        (EPISODE, "R3", 0.0, 1.0, "view_ambiguous", "tester")
    ]
    assert judge_r3 == 0.0
    assert judge_tables(judged_store) == before


def _to_av1(path: Path) -> None:
    """Re-encode a dataset MP4 in place as AV1 (LeRobot's default codec), same frames and timestamps."""
    tmp = path.with_suffix(".av1.mp4")
    with av.open(str(path)) as src, av.open(str(tmp), "w") as out:
        stream_in = src.streams.video[0]
        stream = out.add_stream("libsvtav1", rate=30, options={"crf": "12", "preset": "10"})
        stream.width, stream.height, stream.pix_fmt = stream_in.width, stream_in.height, "yuv420p"
        for i, frame in enumerate(src.decode(stream_in)):
            again = av.VideoFrame.from_ndarray(frame.to_ndarray(format="rgb24"), format="rgb24")
            again.pts, again.time_base = i, Fraction(1, 30)
            for packet in stream.encode(again):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    tmp.replace(path)


@pytest.mark.slow
def test_av1_videos_play_and_step(browser: Browser, dataset_root: Path, tmp_path: Path):
    root = shutil.copytree(dataset_root, tmp_path / "fold_virtual")
    videos = sorted(root.glob("videos/*/chunk-*/*.mp4"))
    assert len(videos) == 3
    for path in videos:
        _to_av1(path)
    with av.open(str(videos[0])) as c:
        assert c.streams.video[0].codec_context.name in ("libdav1d", "libaom-av1", "av1")
    problems = PageProblems()
    with serving(root, tmp_path / "empty.sqlite") as server:
        page = problems.watch(browser.new_page())
        page.goto(f"{server.url}/episodes/{EPISODE}")
        _expect_frame(page, 0)
        for _ in range(5):
            page.keyboard.press(".")
        _expect_frame(page, 5)
        page.close()
    assert problems.errors == []
