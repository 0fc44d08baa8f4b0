"""Security of the review server, through real HTTP: media paths, tokens, CSRF, host names, markup as text."""

from __future__ import annotations

import http.client
import os
import shutil
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser

from evaluation.overrides import OverrideStore, overrides_of
from evaluation.store import CallRecord, EvaluationStore
from tests.support.review_pages import PageProblems, override_csrf
from tests.support.review_server import serving

VIDEO = "videos/observation.images.overhead/chunk-000/file-000.mp4"
TOKEN = "s3cret-token-for-tests-0123456789"
MARKUP = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2"><b>bold</b>'


def _raw_get(url: str, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """A GET whose path goes out exactly as written (httpx and browsers would normalise `..`)."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def _override(token: str | None, criterion: str = "R3", **extra: str) -> dict[str, str]:
    form = {"criterion": criterion, "score": "1", "reason": "judge_missed_evidence", "note": "n", "expected_old": "0"}
    if token is not None:
        form["csrf"] = token
    return form | extra


@pytest.fixture
def dataset_with_escape_links(dataset_root: Path, tmp_path: Path) -> Path:
    """A copy of the dataset whose videos folder holds symlinks that point outside it."""
    root = shutil.copytree(dataset_root, tmp_path / "fold_virtual")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.mp4").write_bytes(b"SECRET BYTES")
    os.symlink(outside / "secret.mp4", root / "videos" / "escape.mp4")
    os.symlink(outside, root / "videos" / "escape_dir")
    os.symlink(root / VIDEO, root / "videos" / "inside_link.mp4")  # a link that stays inside is fine
    return root


def test_media_requests_cannot_leave_the_dataset(dataset_with_escape_links: Path, judged_store: Path):
    root = dataset_with_escape_links
    with serving(root, judged_store) as server:
        status, body = _raw_get(server.url, f"/media/{VIDEO}", {"Range": "bytes=0-15"})
        assert status == 206
        assert body == (root / VIDEO).read_bytes()[:16]
        assert _raw_get(server.url, "/media/videos/inside_link.mp4")[0] == 200
        refused = [
            "/media/../meta/info.json",
            "/media/videos/../../meta/info.json",
            "/media/videos/observation.images.overhead/../../../fold_virtual.evaluation.sqlite",
            "/media/%2e%2e/meta/info.json",
            "/media/videos/%2e%2e/%2e%2e/meta/info.json",
            "/media/videos%2f..%2f..%2fmeta%2finfo.json",
            "/media/%252e%252e/%252e%252e/etc/passwd",
            "/media//etc/passwd",
            "/media/%2fetc%2fpasswd",
            "/media/videos/..%5c..%5cmeta%5cinfo.json",
            "/media/videos/escape.mp4",
            "/media/videos/escape_dir/secret.mp4",
            "/media/meta/info.json",
            "/media/videos/observation.images.overhead/chunk-000/file-000.mp4%00.txt",
        ]
        for path in refused:
            status, body = _raw_get(server.url, path)
            assert status in (403, 404), path
            assert b"SECRET" not in body
            assert b"codebase_version" not in body, path
        assert _raw_get(server.url, "/media/videos/observation.images.overhead/chunk-000/missing.mp4")[0] == 404
        assert _raw_get(server.url, "/static/episode.html")[0] == 404  # templates are not served raw


def test_requests_without_the_access_token_are_refused(dataset_root: Path, judged_store: Path):
    with serving(dataset_root, judged_store, token=TOKEN) as server:
        anonymous = httpx.Client(base_url=server.url)
        for path in ("/", "/episodes/0", f"/media/{VIDEO}", "/static/review.js"):
            assert anonymous.get(path).status_code == 401, path
        assert anonymous.get("/?token=wrong-token-wrong-token").status_code == 401
        assert anonymous.post("/episodes/0/overrides", data=_override("x")).status_code == 401
        assert httpx.get(f"{server.url}/", headers={"X-Review-Token": TOKEN}).status_code == 200
        assert httpx.get(f"{server.url}/episodes/1", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200

        browser_like = httpx.Client(base_url=server.url)
        login = browser_like.get(f"/episodes/2?token={TOKEN}&routed=1")
        assert login.status_code == 303
        assert login.headers["location"] == "/episodes/2?routed=1"  # the token leaves the address bar
        assert "httponly" in login.headers["set-cookie"].lower()
        assert TOKEN not in login.headers["set-cookie"]
        page = browser_like.get("/episodes/2?routed=1")
        assert page.status_code == 200
        posted = browser_like.post("/episodes/2/overrides", data=_override(override_csrf(page.text)))
        assert posted.status_code == 303
    with EvaluationStore(judged_store) as store:
        assert [(o.episode_index, o.criterion) for o in overrides_of(store, "fold_virtual")] == [(2, "R3")]


def test_the_token_login_works_in_a_real_browser(dataset_root: Path, judged_store: Path, browser: Browser):
    problems = PageProblems()
    with serving(dataset_root, judged_store, token=TOKEN) as server:
        page = problems.watch(browser.new_page())
        page.goto(f"{server.url}/episodes/3?token={TOKEN}")
        assert page.url == f"{server.url}/episodes/3"
        page.wait_for_function(
            "() => Array.from(document.querySelectorAll('video')).every((v) => v.readyState >= 2)", timeout=60_000
        )  # the video requests carry the login cookie
        page.close()
        stranger = browser.new_page()  # a fresh context: no cookie
        assert stranger.goto(f"{server.url}/episodes/3").status == 401
        stranger.close()
    assert problems.errors == []


def test_a_post_without_the_page_token_is_rejected_and_nothing_is_written(review_server, judged_store: Path):
    client = httpx.Client(base_url=review_server.url)
    page0 = client.get("/episodes/0")
    token0 = override_csrf(page0.text)
    other = httpx.Client(base_url=review_server.url)
    other_token = override_csrf(other.get("/episodes/0").text)

    missing = client.post("/episodes/0/overrides", data=_override(None, note="my careful note"))
    assert missing.status_code == 403
    assert "my careful note" in missing.text  # what the reviewer typed is shown back, not lost
    assert client.post("/episodes/0/overrides", data=_override("forged.token")).status_code == 403
    assert client.post("/episodes/0/overrides", data=_override(other_token)).status_code == 403  # another session
    assert client.post("/episodes/1/overrides", data=_override(token0)).status_code == 403  # another page
    no_cookie = httpx.post(f"{review_server.url}/episodes/0/overrides", data=_override(token0))
    assert no_cookie.status_code == 403
    as_json = client.post("/episodes/0/overrides", json=_override(token0))
    assert as_json.status_code == 415
    with EvaluationStore(judged_store) as store:
        assert overrides_of(store, "fold_virtual") == []

    accepted = client.post("/episodes/0/overrides", data=_override(token0, t="1.5", filters="routed=1"))
    assert accepted.status_code == 303
    assert accepted.headers["location"] == "/episodes/0?routed=1&t=1.5000#criterion-R3"


def test_only_localhost_names_are_served_without_a_token(review_server):
    assert httpx.get(f"{review_server.url}/", headers={"Host": "localhost:1234"}).status_code == 200
    rebound = httpx.get(f"{review_server.url}/", headers={"Host": "attacker.example:8765"})
    assert rebound.status_code == 400


def _add_markup(store_path: Path) -> None:
    """Judge text and a reviewer note that contain markup, stored as the judge and the app store them."""
    with EvaluationStore(store_path) as store, OverrideStore(store) as overrides:
        run_id = store.query("SELECT run_id FROM runs")[0]["run_id"]
        verdict = {
            c: {
                "observations": [{"frame_ref": f"overhead@0.50s{MARKUP}", "note": MARKUP}],
                "evidence_frames": [MARKUP],
                "score": 1.0,
                "confidence": "high",
                "uncertain": False,
            }
            for c in ("R1", "R2", "R3")
        }
        store.record_call(CallRecord(run_id, 0, "fp", 3, "first", "c", "ok", [], parsed=verdict))
        overrides.record("fold_virtual", 0, "R2", 0.5, "other", MARKUP, "<i>mallory</i>", 1.0)


def test_judge_text_with_markup_is_shown_as_text(review_server, judged_store: Path, browser: Browser):
    _add_markup(judged_store)
    html = httpx.get(f"{review_server.url}/episodes/0").text
    assert MARKUP not in html
    assert "&lt;script&gt;window.pwned = 1&lt;/script&gt;" in html
    assert "<i>mallory</i>" not in html
    problems = PageProblems()
    page = problems.watch(browser.new_page())
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(f"{review_server.url}/episodes/0")
    page.locator("#criterion-R1 details.samples summary").click()
    notes = page.locator("#criterion-R1 .sample .note").all_inner_texts()
    assert MARKUP in notes  # shown verbatim, as text
    assert MARKUP in page.locator("#trail-R2 td.note").inner_text()
    assert page.evaluate("() => window.pwned") is None
    assert page.locator("#criterion-R1 .sample b").all_inner_texts() == ["1"] * 4  # only the page's own <b>
    assert dialogs == []
    page.close()
    assert problems.errors == []
