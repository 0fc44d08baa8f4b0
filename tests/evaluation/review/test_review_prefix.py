"""The review app mounted under a path prefix (one app per dataset in a larger server): every URL stays under it.

Starlette's `mount` leaves the full path in `scope["path"]` and names the prefix in `root_path`; a
proxy-style dispatcher strips the prefix from `path` instead. The app must link, redirect and load
its scripts, styles, videos and traces under the prefix either way, and at the root exactly as before
(the other review tests).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from starlette.types import ASGIApp, Receive, Scope, Send

from evaluation.episode_source import open_dataset
from evaluation.overrides import OverrideStore, overrides_of
from evaluation.review.app import STATIC_TYPES, ReviewSettings, create_app
from evaluation.review.catalog import ReviewCatalog
from evaluation.review.config import AuditConfig
from evaluation.store import EvaluationStore

DATASET = "fold_virtual"
PREFIX = "/datasets/demo"
LINK_ATTRIBUTES = ("href", "src", "action", "data-href", "data-url")  # data-*: URLs the scripts follow
EXTERNAL = ("#", "data:", "http://", "https://", "mailto:")
APP_ROOTS = ("/episodes", "/media", "/static", "/curation", "/health")  # the app's routes, as a script would name them


def _parent_mount(app: ASGIApp) -> ASGIApp:
    """Starlette's way: the parent mounts the app (full path kept, prefix in root_path)."""
    parent = FastAPI()
    parent.mount(PREFIX, app)
    return parent


def _stripping_dispatcher(app: ASGIApp) -> ASGIApp:
    """A proxy-style dispatcher: the prefix moves from `path` to `root_path`."""

    async def dispatch(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            assert scope["path"].startswith(PREFIX + "/"), scope["path"]
            scope = dict(scope, root_path=PREFIX, path=scope["path"][len(PREFIX) :])
        await app(scope, receive, send)

    return dispatch


MOUNTS = pytest.mark.parametrize("mount", [_parent_mount, _stripping_dispatcher], ids=["mount", "stripped"])


@contextmanager
def mounted(
    dataset_root: Path, store_path: Path, mount: Callable[[ASGIApp], ASGIApp] = _parent_mount, token: str = ""
) -> Iterator[TestClient]:
    """A client of the review app under PREFIX, reviewer "tester" (host localhost: the host guard stays on)."""
    source = open_dataset(dataset_root)
    with EvaluationStore(store_path) as store, OverrideStore(store) as overrides:
        catalog = ReviewCatalog(source, store, AuditConfig())
        settings = ReviewSettings(reviewer="tester", access_token=token, check_host=not token)
        app = create_app(catalog, overrides, settings)
        with TestClient(mount(app), base_url="http://localhost", follow_redirects=False) as client:
            yield client


class _Page(HTMLParser):
    """The links of a page (tag, attribute, URL), its forms' fields, and the episode page's JSON data."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.links: list[tuple[str, str, str]] = []
        self.forms: list[dict[str, Any]] = []
        self.data: dict[str, Any] = {}
        self._in_data = False
        self._select = ""  # the name of the <select> whose options are being read
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.links += [(tag, k, a[k]) for k in LINK_ATTRIBUTES if k in a]
        if tag == "form":
            self.forms.append({"attrs": a, "hidden": {}, "radios": {}, "options": {}})
        elif tag == "input" and self.forms and a.get("type") == "hidden":
            self.forms[-1]["hidden"][a.get("name", "")] = a.get("value", "")
        elif tag == "input" and self.forms and a.get("type") == "radio":
            self.forms[-1]["radios"].setdefault(a.get("name", ""), []).append(a.get("value", ""))
        elif tag == "select" and self.forms:
            self._select = a.get("name", "")
            self.forms[-1]["options"][self._select] = []
        elif tag == "option" and self.forms and self._select:
            self.forms[-1]["options"][self._select].append(a.get("value", ""))
        self._in_data = tag == "script" and a.get("id") == "episode-data"

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self._select = ""

    def handle_data(self, data: str) -> None:
        if self._in_data:
            self.data = json.loads(data)
            self._in_data = False

    def internal(self) -> list[tuple[str, str, str]]:
        """The links that point into the app (not an anchor, inline data or another site)."""
        return [link for link in self.links if not link[2].startswith(EXTERNAL)]

    def form(self, css_class: str) -> dict[str, Any]:
        return next(f for f in self.forms if css_class in f["attrs"].get("class", "").split())


def _outside(urls: list[str]) -> list[str]:
    return [u for u in urls if not u.startswith(PREFIX + "/")]


@MOUNTS
def test_every_link_script_video_and_form_of_the_pages_is_under_the_prefix(
    mount: Callable[[ASGIApp], ASGIApp], dataset_root: Path, judged_store: Path
):
    with mounted(dataset_root, judged_store, mount) as client:
        pages = {
            path: client.get(PREFIX + path)
            for path in ("/", "/?routed=1", "/episodes/2?routed=1", "/health", "/curation", "/episodes/99")
        }
        assert {p: r.status_code for p, r in pages.items()} == {p: 404 if "99" in p else 200 for p in pages}
        parsed = {p: _Page(r.text) for p, r in pages.items()}
        for path, page in parsed.items():
            urls = [url for _, _, url in page.internal()]
            assert urls, path
            assert _outside(urls) == [], path
            assert (PREFIX + "/static/review.css") in urls, path  # every page's style, message pages too
        episode = parsed["/episodes/2?routed=1"]
        kinds = {(tag, attr) for tag, attr, _ in episode.internal()}
        assert {("video", "src"), ("script", "src"), ("form", "action"), ("section", "data-url")} <= kinds
        # The neighbours and the list, as review.js follows them on j/k (the links show them too).
        assert episode.data["prev_url"] == PREFIX + "/episodes/0?routed=1"
        assert episode.data["next_url"] == PREFIX + "/episodes/4?routed=1"
        assert _outside([episode.data["list_url"]]) == []
        rows = [url for tag, attr, url in parsed["/"].internal() if (tag, attr) == ("tr", "data-href")]
        assert rows == [f"{PREFIX}/episodes/{i}" for i in range(5)]  # episodes.js opens these on Enter
        assert ("a", "href", f"{PREFIX}/") in parsed["/episodes/99"].links  # the message page's way back

        # Everything the pages link or load answers under the prefix: styles, scripts, videos, traces, pages.
        links = {url for p in parsed.values() for _, attr, url in p.internal() if attr != "action"}  # GETs
        targets = sorted({urlsplit(url)._replace(fragment="").geturl() for url in links})
        answers = {url: client.get(url).status_code for url in targets}
        assert answers == dict.fromkeys(targets, 200)
        videos = [url for tag, attr, url in episode.internal() if tag == "video"]
        assert len(videos) == 3
        seek = client.get(videos[0], headers={"Range": "bytes=0-99"})  # the players seek with range requests
        assert (seek.status_code, len(seek.content)) == (206, 100)
        traces = client.get(next(url for _, attr, url in episode.internal() if attr == "data-url"))
        assert traces.headers["content-type"] == "application/json"
        assert set(traces.json()) >= {"names", "state", "action", "marks"}


@MOUNTS
def test_an_override_posted_from_the_mounted_page_is_recorded_and_redirects_under_the_prefix(
    mount: Callable[[ASGIApp], ASGIApp], dataset_root: Path, judged_store: Path
):
    with mounted(dataset_root, judged_store, mount) as client:
        page = _Page(client.get(f"{PREFIX}/episodes/2?routed=1").text)
        form = page.form("override")
        assert form["attrs"]["action"] == f"{PREFIX}/episodes/2/overrides"
        assert "judge_missed_evidence" in form["options"]["reason"]
        fields = form["hidden"] | {
            "score": form["radios"]["score"][-1],
            "reason": "judge_missed_evidence",
            "note": "scored under the prefix",
        }
        posted = client.post(form["attrs"]["action"], data=fields)
        assert posted.status_code == 303
        location = posted.headers["location"]
        assert location.startswith(f"{PREFIX}/episodes/2?routed=1&t="), location
        assert location.endswith(f"#criterion-{fields['criterion']}")
        after = client.get(location)
        assert after.status_code == 200
        assert "scored under the prefix" in after.text  # the audit trail shows it
        refused = client.post(form["attrs"]["action"], data=fields | {"csrf": "stale.token"})
        assert refused.status_code == 403
        assert ("a", "href", f"{PREFIX}/episodes/2") in _Page(refused.text).links
    with EvaluationStore(judged_store) as store:
        recorded = overrides_of(store, DATASET, 2)
    assert [(o.criterion, o.note, o.reviewer) for o in recorded] == [(fields["criterion"], fields["note"], "tester")]


@MOUNTS
def test_curation_posts_redirect_under_the_prefix(
    mount: Callable[[ASGIApp], ASGIApp], dataset_root: Path, judged_store: Path, tmp_path: Path
):
    dataset = tmp_path / DATASET  # the marks are saved beside the dataset: a copy, the shared one stays as it is
    shutil.copytree(dataset_root, dataset)
    with mounted(dataset, judged_store, mount) as client:
        listing = _Page(client.get(f"{PREFIX}/?routed=1").text).form("curate")
        assert listing["attrs"]["action"] == f"{PREFIX}/curation"
        saved = client.post(listing["attrs"]["action"], data=listing["hidden"] | {"drop": "1", "action": "save"})
        assert (saved.status_code, saved.headers["location"]) == (303, f"{PREFIX}/?routed=1")
        review = client.post(listing["attrs"]["action"], data=listing["hidden"] | {"action": "review"})
        assert (review.status_code, review.headers["location"]) == (303, f"{PREFIX}/curation")
        trim = _Page(client.get(f"{PREFIX}/episodes/3").text).form("trim")
        assert trim["attrs"]["action"] == f"{PREFIX}/episodes/3/trim"
        kept = client.post(
            trim["attrs"]["action"], data=trim["hidden"] | {"start": "2", "stop": "20", "action": "save"}
        )
        assert (kept.status_code, kept.headers["location"]) == (303, f"{PREFIX}/episodes/3#traces")
        bad = client.post(trim["attrs"]["action"], data=trim["hidden"] | {"start": "x", "stop": "", "action": "save"})
        assert bad.status_code == 400
        assert ("a", "href", f"{PREFIX}/episodes/3") in _Page(bad.text).links
        assert "episode 3: frames 2:20" in client.get(f"{PREFIX}/curation").text


@MOUNTS
def test_the_token_login_redirects_under_the_prefix(
    mount: Callable[[ASGIApp], ASGIApp], dataset_root: Path, judged_store: Path
):
    with mounted(dataset_root, judged_store, mount, token="s3cret-token") as client:
        assert client.get(f"{PREFIX}/episodes/1").status_code == 401
        login = client.get(f"{PREFIX}/episodes/1?token=s3cret-token&routed=1")
        assert (login.status_code, login.headers["location"]) == (303, f"{PREFIX}/episodes/1?routed=1")
        assert "path=/;" in login.headers["set-cookie"].lower()  # the cookie covers the prefix
        assert client.get(login.headers["location"]).status_code == 200


def test_the_scripts_name_no_path_of_the_app(dataset_root: Path, judged_store: Path):
    """The scripts follow only URLs the page hands them (data-href, data-url, the episode data), never their own."""
    with mounted(dataset_root, judged_store) as client:
        for name in (n for n in STATIC_TYPES if n.endswith(".js")):
            served = client.get(f"{PREFIX}/static/{name}")
            assert served.status_code == 200, name
            assert re.findall(r"""["'`]/[^/]""", served.text) == [], name  # no string that starts with a path
            assert [r for r in APP_ROOTS if r in served.text] == [], name
