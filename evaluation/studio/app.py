"""The so101-studio web app: one page for the rig, recording, deployment, datasets and the judge.

    GET  /                      the console (panels: Rig, Record, Deploy, Datasets, Judge)
    GET  /state.json            jobs (command line, output, exit), control, datasets and their cards,
                                the last doctor's rows, the studio's events; a poll from the controlling
                                tab keeps its lease (control.py)
    POST /control               take control (`{"take_over": true}` takes it from another tab)
    POST /control/release       hand control back
    POST /preview/{action}      the command line a form would run, run nothing (any page)
    POST /actions/{action}      start the action's command (controlling tab only)
    POST /jobs/{n}/keys         type a key on job n's terminal: next, rerecord, pause, stop, take_over,
                                score_0, score_half, score_1, skip (controlling tab only)
    POST /jobs/{n}/stop         Ctrl-C for job n: its safe stop (controlling tab only)
    POST /estop                 the e-stop key on the job that holds the rig (any page: safety first)
    GET  /live/state.json, /live/frame/{camera}.jpg   the running command's live view (teleop, record);
                                204 while there is no picture to show
    /datasets/{name}/...        so101-review's pages for a workspace dataset (review_mounts.py)

Every post carries the page's CSRF token in `X-Studio-CSRF` and its tab id in `X-Studio-Tab`; a
post from another site can set neither. The access token and the host check are the review page's
(evaluation/review/access.py, security.py): loopback without a token, a token for any other bind.
"""

from __future__ import annotations

import json
import logging
import re
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.concurrency import run_in_threadpool
from starlette.routing import Mount

from evaluation.review.access import authenticate, text_response, with_page_headers
from evaluation.review.security import SESSION_COOKIE, Secrets, host_allowed
from evaluation.studio.actions import ActionInputError, command_for
from evaluation.studio.datasets import workspace_datasets
from evaluation.studio.jobs import Job, JobRefusedError
from evaluation.studio.review_mounts import PREFIX, ReviewMounts
from evaluation.studio.studio import Studio

log = logging.getLogger(__name__)
STATIC_DIR = Path(__file__).parent / "static"
STATIC_TYPES = {"studio.js": "text/javascript", "studio.css": "text/css"}
CSRF_HEADER = "x-studio-csrf"
TAB_HEADER = "x-studio-tab"
CSRF_SCOPE = "studio"
# The keys a page may type, as the terminal letters teleop/keys.py reads (tests/evaluation/studio checks
# each one means the same Key there). The e-stop has its own route: any page may press it.
KEYS = {
    "next": "n",
    "rerecord": "r",
    "pause": " ",
    "stop": "q",
    "take_over": "c",
    "score_0": "0",
    "score_half": "h",
    "score_1": "1",
    "skip": "s",
}
ESTOP_KEY = "e"
_LIVE_URL = re.compile(r"live view: (http://(?:127\.0\.0\.1|localhost):\d+)/")
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; media-src 'self'; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)


def create_app(studio: Studio, *, access_token: str = "", check_host: bool = True, reviewer: str = "studio") -> FastAPI:
    """The app over a started studio (the caller closes it, which stops its jobs)."""
    keys = Secrets(access_token)
    env = Environment(loader=FileSystemLoader(STATIC_DIR), autoescape=True, undefined=StrictUndefined)
    mounts = ReviewMounts(studio.place.workspace, reviewer)
    app = FastAPI(title="so101-studio", docs_url=None, redoc_url=None, openapi_url=None)
    app.router.routes.append(Mount(PREFIX, app=mounts))
    app.state.mounts = mounts

    @app.middleware("http")
    async def guard(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if check_host and not host_allowed(request.headers.get("host", "")):
            response: Response = text_response(400, "this studio answers requests for localhost only")
        elif access_token and (denied := authenticate(request, keys, "so101-studio")) is not None:
            response = denied
        elif _studio_post(request) and not _posted_by_page(request, keys):
            response = text_response(403, "refused: this page's session expired; reload the page")
        else:
            response = await call_next(request)
        return with_page_headers(response, CSP)

    @app.get("/", response_class=HTMLResponse)
    def console(request: Request) -> Response:
        session = request.cookies.get(SESSION_COOKIE) or Secrets.new_session()
        html = env.get_template("studio.html").render(
            csrf=keys.csrf_token(session, CSRF_SCOPE),
            workspace=str(studio.place.workspace),
            rig=str(studio.place.rig_file or "the virtual rig"),
        )
        response = HTMLResponse(html)
        response.set_cookie(SESSION_COOKIE, session, httponly=True, samesite="strict", path="/")
        return response

    @app.get("/static/{name}")
    def static(name: str) -> Response:
        if name not in STATIC_TYPES:
            return text_response(404, "not found")
        return Response((STATIC_DIR / name).read_bytes(), media_type=STATIC_TYPES[name])

    @app.get("/state.json")
    def state(request: Request) -> Response:
        tab = request.headers.get(TAB_HEADER, "") or request.query_params.get("tab", "")
        controlling = bool(tab) and studio.lease.seen(tab)
        return JSONResponse(_state(studio, controlling))

    @app.post("/control")
    async def control(request: Request) -> Response:
        body = await _json(request)
        tab = _tab(request)
        held = studio.lease.claim(tab, take_over=bool(body.get("take_over")))
        if held and body.get("take_over"):
            studio.say("control was taken over by another page")
        return JSONResponse({"controlling": held})

    @app.post("/control/release")
    def release(request: Request) -> Response:
        studio.lease.release(_tab(request))
        return JSONResponse({"controlling": False})

    @app.post("/preview/{action}")
    async def preview(request: Request, action: str) -> Response:
        fields = await _json(request)
        try:
            line, lane = command_for(action, _strings(fields), studio.place)
        except ActionInputError as e:  # an answer, not a failure: the form is not filled in yet
            return JSONResponse({"command": "", "error": str(e)})
        return JSONResponse({"command": line.shown, "lane": str(lane)})

    @app.post("/actions/{action}")
    async def run_action(request: Request, action: str) -> Response:
        if not studio.lease.holds(_tab(request)):
            return _not_controlling()
        fields = _strings(await _json(request))
        try:
            job = await run_in_threadpool(studio.run, action, fields)
        except ActionInputError as e:
            return JSONResponse({"error": str(e)}, status_code=400)
        except JobRefusedError as e:
            return JSONResponse({"error": str(e)}, status_code=409)
        return JSONResponse({"job": job.number, "command": job.line.shown})

    @app.post("/jobs/{number}/keys")
    async def press(request: Request, number: int) -> Response:
        if not studio.lease.holds(_tab(request)):
            return _not_controlling()
        key = str((await _json(request)).get("key", ""))
        if key not in KEYS:
            return JSONResponse({"error": f"key={key!r}: expected one of {', '.join(KEYS)}"}, status_code=400)
        answer = _on_job(studio, number, lambda job: job.press(KEYS[key]))
        if answer.status_code == 200:
            studio.say(f"job {number}: {key.replace('_', ' ')} typed ({KEYS[key]!r})")
        return answer

    @app.post("/jobs/{number}/stop")
    def stop(request: Request, number: int) -> Response:
        if not studio.lease.holds(_tab(request)):
            return _not_controlling()
        return _on_job(studio, number, Job.interrupt)

    @app.post("/estop")
    def estop() -> Response:
        job = studio.board.rig_job()
        if job is None:
            return JSONResponse({"error": "no command is driving the arms: nothing to freeze"}, status_code=409)
        try:
            job.press(ESTOP_KEY)
        except JobRefusedError as e:
            return JSONResponse({"error": str(e)}, status_code=409)
        studio.say(f"e-stop pressed: job {job.number} ({job.line.argv[0]}) freezes the followers")
        return JSONResponse({"job": job.number})

    @app.get("/live/{path:path}")
    def live(path: str) -> Response:
        if path != "state.json" and not re.fullmatch(r"frame/[a-z0-9_]+\.jpg", path):
            return text_response(404, "not found")
        base = _live_url(studio)
        if base is None:  # no command serves one now (it has not started its view yet, or has ended)
            return Response(status_code=204, headers={"Cache-Control": "no-store"})
        try:
            with urllib.request.urlopen(f"{base}/{path}", timeout=2) as reply:
                body, kind = reply.read(), reply.headers.get("Content-Type", "application/octet-stream")
        except OSError:  # no picture of that camera yet, or the view closing as its command ends
            return Response(status_code=204, headers={"Cache-Control": "no-store"})
        return Response(body, media_type=kind, headers={"Cache-Control": "no-store"})

    return app


def _studio_post(request: Request) -> bool:
    """A post to the studio's own routes (the review pages check their own CSRF tokens)."""
    return request.method == "POST" and not request.url.path.startswith(PREFIX + "/")


def _posted_by_page(request: Request, keys: Secrets) -> bool:
    """A post from one of this studio's pages: its CSRF token (a custom header no other site can set)."""
    session = request.cookies.get(SESSION_COOKIE, "")
    return keys.check_csrf(request.headers.get(CSRF_HEADER, ""), session, CSRF_SCOPE)


def _tab(request: Request) -> str:
    return request.headers.get(TAB_HEADER, "")[:64]


def _not_controlling() -> Response:
    return JSONResponse(
        {"error": "this page is read-only: another page controls the studio (Take control, then try again)"},
        status_code=403,
    )


async def _json(request: Request) -> dict[str, Any]:
    try:
        body = json.loads((await request.body()) or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {}
    return body if isinstance(body, dict) else {}


def _strings(fields: dict[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in fields.items() if isinstance(v, str | int | float | bool)}


def _on_job(studio: Studio, number: int, act: Callable[[Job], None]) -> Response:
    job = studio.board.get(number)
    if job is None:
        return JSONResponse({"error": f"no job {number}"}, status_code=404)
    try:
        act(job)
    except JobRefusedError as e:
        return JSONResponse({"error": str(e)}, status_code=409)
    return JSONResponse({"job": number})


def _live_url(studio: Studio) -> str | None:
    job = studio.board.rig_job()
    if job is None:
        return None
    found = _LIVE_URL.search(job.text())
    return found.group(1) if found else None


def doctor_rows(text: str) -> list[dict[str, str]] | None:
    """The rows `so101-doctor --json=true` printed, from its terminal output; None if there are none."""
    lines = text.splitlines()
    try:
        first = lines.index("[")
        last = len(lines) - 1 - lines[::-1].index("]")
    except ValueError:
        return None
    try:
        rows = json.loads("\n".join(lines[first : last + 1]))
    except json.JSONDecodeError:
        return None
    return rows if isinstance(rows, list) else None


def _state(studio: Studio, controlling: bool) -> dict[str, Any]:
    jobs = studio.board.all()
    doctor = next((j for j in reversed(jobs) if j.line.argv[0] == "so101-doctor" and not j.running), None)
    rig_job = studio.board.rig_job()
    return {
        "control": {"you": controlling, "held": studio.lease.held, "lapse_s": studio.lease.lapse_s},
        "rig_job": rig_job.number if rig_job else None,
        "live": _live_url(studio) is not None,
        "jobs": [asdict(j.view(studio.board.since_s)) for j in jobs[-10:]],
        "doctor": None if doctor is None else {"job": doctor.number, "rows": doctor_rows(doctor.text())},
        "datasets": [asdict(d) for d in workspace_datasets(studio.place.workspace)],
        "events": [asdict(e) for e in studio.events],
    }
