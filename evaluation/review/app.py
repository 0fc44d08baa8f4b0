"""The so101-review web app: episodes list, episode page, override posts, dataset videos.

    GET  /                          episodes: judge and effective scores, flags, review status, filters
    GET  /episodes/{i}              three synced videos, joint traces, evidence, motion check, overrides
    GET  /episodes/{i}/timeline     the traces and timeline marks under the videos (JSON)
    POST /episodes/{i}/overrides    append an override (form post with the page's CSRF token), then redirect
    /curation, POST /episodes/{i}/trim   drop and trim marks, preview, write (curation_pages.py)
    GET  /media/videos/...mp4       a dataset video (HTTP range requests, so the players can seek)
    GET  /static/{review.js,...}    the page's script and style

Pages are Jinja templates with autoescaping: judge text is always shown as text. Every response
carries a strict Content-Security-Policy (scripts from this server only, no inline script).
Handlers that touch SQLite are plain functions (run in the thread pool), so posts from several
reviewers are written concurrently and serialised by the override store.

Every override is recorded under the server's reviewer (fixed when it starts; a posted `reviewer` is
ignored) with the fingerprint of the episode as the served dataset holds it. An override post's body
is refused with 413 past forms.MAX_BODY_BYTES before it is buffered (body_limit). Judge results and
overrides made on another version of an episode are left out and named in a notice atop the page.

The app may be mounted under a path prefix (one app per dataset in a larger server: the ASGI scope's
`root_path`, as Starlette's `mount` sets it). Every URL it emits carries that prefix: templates get it
as `base` and put it before their literal paths, URLs built here (redirects, the neighbours' links the
scripts follow, videos) are complete, and the scripts only follow URLs the page hands them. Served at
the root, `base` is "" and every URL is what it always was.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.concurrency import run_in_threadpool

from evaluation.episode_facts import timeline
from evaluation.errors import EvaluationError
from evaluation.overrides import REASON_CODES, OverrideStore
from evaluation.review.access import authenticate, mount_base, text_response, with_page_headers
from evaluation.review.body_limit import BodyRefusedError, read_body
from evaluation.review.catalog import REVIEW_STATUSES, EpisodeFilter, ReviewCatalog
from evaluation.review.curation_pages import Curation, add_curation_routes
from evaluation.review.episode_view import episode_detail
from evaluation.review.filters import VERDICTS
from evaluation.review.forms import MAX_BODY_BYTES, FormError, override_form, parse_form, parse_time
from evaluation.review.health_pages import add_health_routes
from evaluation.review.notices import episode_notices, insert_notices, list_notices, video_notices
from evaluation.review.security import (
    SESSION_COOKIE,
    MediaPathError,
    Secrets,
    host_allowed,
    resolve_media,
)
from evaluation.vocabulary import SCORE_LEVELS

log = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).parent / "static"
STATIC_TYPES = {
    "review.js": "text/javascript",
    "episodes.js": "text/javascript",
    "traces.js": "text/javascript",
    "trim.js": "text/javascript",
    "review.css": "text/css",
}
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self'; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)


@dataclass(frozen=True)
class ReviewSettings:
    """How the app treats requests."""

    reviewer: str  # name recorded with each override, fixed at start (a posted `reviewer` field is ignored)
    access_token: str = ""  # shared secret; "" serves without login (loopback only, checked by the command)
    check_host: bool = True  # answer only Host headers naming localhost (DNS-rebinding guard without a token)


def fmt_score(value: float | None) -> str:
    """A score for display: 0, 0.5, 1, or an en dash when missing."""
    return "–" if value is None else f"{value:g}"


def create_app(catalog: ReviewCatalog, overrides: OverrideStore, settings: ReviewSettings) -> FastAPI:
    """Build the app over an opened dataset, its store and an override store (the caller closes them)."""
    keys = Secrets(settings.access_token)
    env = Environment(loader=FileSystemLoader(STATIC_DIR), autoescape=True, undefined=StrictUndefined)
    env.filters["score"] = fmt_score
    app = FastAPI(title="so101-review", docs_url=None, redoc_url=None, openapi_url=None)
    pages = _Pages(catalog, overrides, keys, env, settings)
    add_curation_routes(app, pages.curation)
    add_health_routes(app, pages)

    @app.middleware("http")
    async def guard(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if settings.check_host and not host_allowed(request.headers.get("host", "")):
            response: Response = text_response(400, "this review server answers requests for localhost only")
        elif settings.access_token and (denied := authenticate(request, keys, "so101-review")) is not None:
            response = denied
        else:
            response = await call_next(request)
        return with_page_headers(response, CSP)

    @app.get("/", response_class=HTMLResponse)
    def episodes(request: Request) -> Response:
        return pages.episodes(request)

    @app.get("/episodes/{index}", response_class=HTMLResponse)
    def episode(request: Request, index: int) -> Response:
        return pages.episode(request, index)

    @app.get("/episodes/{index}/timeline")
    def episode_timeline(index: int) -> Response:
        if not any(e.index == index for e in catalog.source.episodes):
            return text_response(404, f"the dataset has no episode {index}")
        return JSONResponse(timeline(catalog.source, catalog.source.episode(index)))

    @app.post("/episodes/{index}/overrides")
    async def post_override(request: Request, index: int) -> Response:
        content_type = request.headers.get("content-type", "").split(";")[0].strip()
        if content_type != "application/x-www-form-urlencoded":
            return text_response(415, "post the override form as application/x-www-form-urlencoded")
        try:
            body = await read_body(request, MAX_BODY_BYTES)
        except BodyRefusedError as e:
            refused = text_response(e.status, f"override not recorded: {e}")
            refused.headers["Connection"] = "close"  # the rest of the body is never read
            return refused
        return await run_in_threadpool(pages.post_override, request, index, body)

    @app.get("/media/{path:path}")
    def media(path: str) -> Response:
        try:
            target = resolve_media(catalog.source.root, path)
        except MediaPathError as e:
            return text_response(e.status, f"refused: {e}")
        return FileResponse(target, media_type="video/mp4")

    @app.get("/static/{name}")
    def static(name: str) -> Response:
        if name not in STATIC_TYPES:
            return text_response(404, "no such file")
        return FileResponse(STATIC_DIR / name, media_type=STATIC_TYPES[name])

    return app


class _Pages:
    """Page handlers (plain functions: they run in the thread pool)."""

    def __init__(
        self,
        catalog: ReviewCatalog,
        overrides: OverrideStore,
        keys: Secrets,
        env: Environment,
        settings: ReviewSettings,
    ) -> None:
        self.catalog = catalog
        self.overrides = overrides
        self.keys = keys
        self.env = env
        self.settings = settings
        self.curation = Curation(self)

    def episodes(self, request: Request) -> Response:
        criteria = self.catalog.criteria()
        try:
            flt = EpisodeFilter.from_query(request.query_params, [c.id for c in criteria])
        except EvaluationError as e:
            return self._message(request, 400, "bad filter", str(e))
        shown = [c for c in criteria if not flt.criterion or c.id == flt.criterion]
        rows = self.catalog.select(flt)
        session = self._session(request)
        return self._render(
            request,
            "episodes.html",
            session=session,
            curation=self.curation.list_context(session[0]),
            shown_indices=",".join(str(s.index) for s in rows),
            criteria=criteria,
            shown=shown,
            rows=rows,
            flt=flt,
            tags=self.catalog.tags(),
            statuses=REVIEW_STATUSES,
            judged=self.catalog.judged(),
            total=len(self.catalog.source.episodes),
            dataset_id=self.catalog.dataset_id,
            ids=[c.id for c in shown],
            audit=self.catalog.audit,
            notices=[
                *video_notices(self.catalog.source),
                *list_notices(self.catalog.stale(), self.catalog.source.root, self.catalog.stale_sidecars()),
            ],
            verdicts=VERDICTS,
        )

    def episode(self, request: Request, index: int, status: int = 200, form: dict[str, Any] | None = None) -> Response:
        criteria = self.catalog.criteria()
        try:
            flt = EpisodeFilter.from_query(request.query_params, [c.id for c in criteria])
        except EvaluationError as e:
            return self._message(request, 400, "bad filter", str(e))
        summaries = self.catalog.summaries()
        summary = next((s for s in summaries if s.index == index), None)
        if summary is None:
            last = len(summaries) - 1
            return self._message(
                request, 404, "no such episode", f"the dataset has no episode {index}; it holds 0..{last}"
            )
        prev_i, next_i = _neighbours(index, [s.index for s in self.catalog.select(flt, summaries)])
        base = mount_base(request)
        detail = episode_detail(self.catalog, summary, base)
        qs = flt.query_string()
        start_t = parse_time(request.query_params.get("t", ""))
        if form is not None:
            start_t = form["t"]
        routed = [c.info.id for c in detail.criteria if summary.routed(c.info.id)]
        selected = flt.criterion or (routed or [c.id for c in criteria] or [""])[0]
        data = {
            "fps": summary.episode.fps,
            "length": summary.episode.length,
            "start_t": start_t,
            "prev_url": _episode_url(prev_i, qs, base=base),  # complete URLs: review.js follows them as they are
            "next_url": _episode_url(next_i, qs, base=base),
            "list_url": f"{base}/?{qs}",
            "criteria": [c.info.id for c in detail.criteria],
            "selected": selected,
        }
        session, new = self._session(request)
        return self._render(
            request,
            "episode.html",
            status=status,
            session=(session, new),
            detail=detail,
            summary=summary,
            csrf=self.keys.csrf_token(session, f"episode:{index}"),
            reasons=REASON_CODES,
            levels=SCORE_LEVELS,
            flt=flt,
            qs=qs,
            prev_url=data["prev_url"],
            next_url=data["next_url"],
            data=data,
            form=form,
            reviewer=self.settings.reviewer,
            dataset_id=self.catalog.dataset_id,
            notices=episode_notices(summary, self.catalog.source.root),
            curation=self.curation.episode_context(session, index, summary.episode.length),
        )

    def post_override(self, request: Request, index: int, body: bytes) -> Response:
        try:
            fields = parse_form(body)
        except FormError as e:
            return self._message(request, 400, "override not recorded", str(e))
        session = request.cookies.get(SESSION_COOKIE, "")
        if not self.keys.check_csrf(fields.get("csrf", ""), session, f"episode:{index}"):
            return self._message(
                request,
                403,
                "override not recorded: the form token is missing or stale",
                "Reload the episode page and submit again (the server may have restarted). What you sent:",
                kept=fields.get("note", ""),
                back=_episode_url(index, ""),
            )
        criteria = [c.id for c in self.catalog.criteria()]
        flt = _safe_filter(fields.get("filters", ""), criteria)
        if not any(e.index == index for e in self.catalog.source.episodes):
            return self._message(request, 404, "no such episode", f"the dataset has no episode {index}")
        try:
            form = override_form(fields)
            if form.criterion not in criteria:
                raise FormError(f"criterion={form.criterion!r}; allowed: {criteria}")
            self.overrides.record(
                self.catalog.dataset_id,
                index,
                form.criterion,
                form.score,
                form.reason,
                form.note,
                self.settings.reviewer,
                form.expected_old,
                fingerprint=self.catalog.fingerprints[index],
                dataset_root=str(self.catalog.source.root),
            )
        except EvaluationError as e:
            kept = {
                "criterion": fields.get("criterion", ""),
                "score": fields.get("score", ""),
                "error": str(e),
                "reason": fields.get("reason", ""),
                "note": fields.get("note", ""),
                "t": parse_time(fields.get("t", "")),
            }
            return self.episode(_with_query(request, flt.query_string()), index, status=400, form=kept)
        url = _episode_url(index, flt.query_string(), t=form.time_s) + f"#criterion-{form.criterion}"
        return RedirectResponse(self.url(request, url), status_code=303)

    def url(self, request: Request, path: str) -> str:
        """The URL a browser asks for to reach `path` (a path inside the app, "/..."): under the mount's prefix."""
        return mount_base(request) + path

    def _session(self, request: Request) -> tuple[str, bool]:
        current = request.cookies.get(SESSION_COOKIE, "")
        return (current, False) if len(current) >= 16 else (Secrets.new_session(), True)

    def _render(
        self,
        request: Request,
        template: str,
        status: int = 200,
        session: tuple[str, bool] | None = None,
        **context: Any,
    ) -> Response:
        html = self.env.get_template(template).render(base=mount_base(request), **context)
        html = insert_notices(html, context.get("notices", []))
        response = HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-store"})
        if session is not None and session[1]:
            # Path "/" covers any prefix the app is mounted under; the session id is only a random name that
            # each app's own key signs CSRF tokens with, so apps mounted side by side can share it.
            response.set_cookie(SESSION_COOKIE, session[0], httponly=True, samesite="strict", path="/")
        return response

    def _message(
        self, request: Request, status: int, title: str, detail: str, kept: str = "", back: str = "/"
    ) -> Response:
        """A message page; `back` is a path inside the app (the link gets the mount's prefix)."""
        html = self.env.get_template("message.html").render(
            base=mount_base(request), title=title, detail=detail, kept=kept, back=self.url(request, back)
        )
        return HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-store"})


def _neighbours(index: int, listed: list[int]) -> tuple[int | None, int | None]:
    before = [i for i in listed if i < index]
    after = [i for i in listed if i > index]
    return (before[-1] if before else None), (after[0] if after else None)


def _episode_url(index: int | None, qs: str, t: float | None = None, base: str = "") -> str:
    """An episode page's URL ("" for no episode): a path inside the app, under `base` when given."""
    if index is None:
        return ""
    query = "&".join(p for p in (qs, "" if t is None else f"t={t:.4f}") if p)
    return f"{base}/episodes/{index}" + (f"?{query}" if query else "")


def _safe_filter(raw: str, criteria: list[str]) -> EpisodeFilter:
    query = {k: v[0] for k, v in parse_qs(raw).items()}
    try:
        return EpisodeFilter.from_query(query, criteria)
    except EvaluationError:
        return EpisodeFilter()


def _with_query(request: Request, qs: str) -> Request:
    scope = dict(request.scope)
    scope["query_string"] = qs.encode()
    return Request(scope)
