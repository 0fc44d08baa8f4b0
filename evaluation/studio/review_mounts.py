"""The Datasets panel's pages: so101-review's own app (episodes, overrides, health, curation) per dataset.

`/datasets/<name>/...` is served by the review app of the workspace's dataset `<name>`, created as
so101-review creates it (evaluation/review/opened.py) and mounted under that prefix (the ASGI
scope's root_path, which every link of the review pages honours). The studio guards the requests
(its token, its host check) before they get here, so the review app itself checks neither.

A dataset changes under the studio (a recording adds episodes, a rollout's live scores arrive): the
review app is opened again when LeRobot's info.json or the live scores folder has changed since it
was opened, so the page never shows a dataset as it was. Pages already open post to the new app;
their CSRF token was minted by the old one, and the refusal says to reload.
"""

from __future__ import annotations

import logging
import threading
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from starlette.concurrency import run_in_threadpool
from starlette.responses import PlainTextResponse
from starlette.routing import get_route_path
from starlette.types import ASGIApp, Receive, Scope, Send

from evaluation.review.app import ReviewSettings, create_app
from evaluation.review.opened import opened_review
from evaluation.studio.actions import ActionInputError, dataset_name
from robot.shell.errors import CommandError
from teleop.dataset.live_scores import LIVE_SCORES_DIR

log = logging.getLogger(__name__)
PREFIX = "/datasets"


@dataclass
class _Mounted:
    app: ASGIApp
    stamp: tuple[int, int]
    closer: ExitStack


def _stamp(root: Path) -> tuple[int, int]:
    """What changes when the dataset does: info.json (episodes saved, curated) and the live scores folder."""

    def mtime(path: Path) -> int:
        try:
            return path.stat().st_mtime_ns
        except OSError:
            return 0

    return mtime(root / "meta" / "info.json"), mtime(root / LIVE_SCORES_DIR)


class ReviewMounts:
    """An ASGI app for `/datasets/<name>/...`: each dataset's review app, opened on first use."""

    def __init__(self, workspace: Path, reviewer: str) -> None:
        self._workspace = workspace
        self._reviewer = reviewer
        self._mounted: dict[str, _Mounted] = {}
        self._lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Dispatch to the named dataset's review app, its name moved into the root_path.

        Mounted at PREFIX, Starlette gives this app the full path and root_path=PREFIX; the review
        app gets root_path=PREFIX/<name> (its links' base) and routes on what follows.
        """
        name, _, _ = get_route_path(scope).lstrip("/").partition("/")
        try:
            app = await run_in_threadpool(self._app, dataset_name({"dataset": name}))  # opening reads files
        except CommandError as e:  # no such dataset, or one that cannot be opened: its one line, with the next step
            await PlainTextResponse(f"{e}\n", status_code=404)(scope, receive, send)
            return
        await app({**scope, "root_path": f"{scope.get('root_path', '')}/{name}"}, receive, send)

    def _app(self, name: str) -> ASGIApp:
        root = self._workspace / "datasets" / name
        if not (root / "meta" / "info.json").is_file():
            raise ActionInputError(f"no dataset {name!r} in {self._workspace / 'datasets'}. Next: record it first")
        stamp = _stamp(root)
        with self._lock:
            mounted = self._mounted.get(name)
            if mounted is not None and mounted.stamp == stamp:
                return mounted.app
            if mounted is not None:
                mounted.closer.close()
                del self._mounted[name]
            closer = ExitStack()
            review = closer.enter_context(opened_review(root, say=lambda line: log.info("%s: %s", name, line)))
            settings = ReviewSettings(reviewer=self._reviewer, access_token="", check_host=False)
            self._mounted[name] = _Mounted(create_app(review.catalog, review.overrides, settings), stamp, closer)
            return self._mounted[name].app

    def close(self) -> None:
        """Close every opened store."""
        with self._lock:
            for mounted in self._mounted.values():
                mounted.closer.close()
            self._mounted.clear()
