"""The review page's curation: drop marks on the list, trims on the episode page, preview and write.

    GET  /curation                 the draft, the so101-edit command it stands for, preview and write
    POST /curation                 save the list's drop marks (and the output folder); preview or write
    GET  /curation/jobs/{n}        a write's output as so101-edit prints it (the page refreshes while it runs)
    POST /episodes/{i}/trim        keep a span of an episode (typed, set at the cursor, or proposed)

Every post carries the page's CSRF token (scope "curation"); marks are saved in the draft beside the
dataset (curation.py) before anything runs, so nothing a person marked is lost to a failed write.
Redirects go through `Pages.url`, so they stay under the prefix the app is mounted at (app.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qs

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from evaluation.review.body_limit import BodyRefusedError, read_body
from evaluation.review.catalog import ReviewCatalog
from evaluation.review.curation import (
    Draft,
    EditJobs,
    command_line,
    draft_path,
    edit_args,
    load_draft,
    preview,
    save_draft,
)
from evaluation.review.forms import MAX_BODY_BYTES
from evaluation.review.security import SESSION_COOKIE, Secrets
from teleop.dataset.curate.trim_proposal import propose_trim


class Pages(Protocol):
    """What curation needs of the app's page handlers: a seam, so app.py imports this module and not the reverse."""

    catalog: ReviewCatalog
    keys: Secrets

    def url(self, request: Request, path: str) -> str:
        """The URL of `path` (inside the app) as the browser asks for it: under the prefix the app is mounted at."""
        ...

    def _session(self, request: Request) -> tuple[str, bool]: ...

    def _render(
        self,
        request: Request,
        template: str,
        status: int = 200,
        session: tuple[str, bool] | None = None,
        **context: Any,
    ) -> Response: ...

    def _message(
        self, request: Request, status: int, title: str, detail: str, kept: str = "", back: str = "/"
    ) -> Response: ...


SCOPE = "curation"


def add_curation_routes(app: FastAPI, curation: Curation) -> None:
    """Mount the curation routes on `app`."""

    @app.get("/curation")
    def show(request: Request) -> Response:
        return curation.page(request)

    @app.post("/curation")
    async def post(request: Request) -> Response:
        fields = await _fields(request)
        if isinstance(fields, Response):
            return fields
        return await run_in_threadpool(curation.post, request, fields)

    @app.get("/curation/jobs/{number}")
    def job(request: Request, number: int) -> Response:
        return curation.job(request, number)

    @app.post("/episodes/{index}/trim")
    async def trim(request: Request, index: int) -> Response:
        fields = await _fields(request)
        if isinstance(fields, Response):
            return fields
        return await run_in_threadpool(curation.trim, request, index, fields)


async def _fields(request: Request) -> dict[str, list[str]] | Response:
    try:
        body = await read_body(request, MAX_BODY_BYTES)
        return parse_qs(body.decode("utf-8"), keep_blank_values=True)
    except BodyRefusedError as e:
        return Response(f"not saved: {e}\n", status_code=e.status, media_type="text/plain")
    except UnicodeDecodeError:
        return Response("not saved: the form is not UTF-8\n", status_code=400, media_type="text/plain")


def _first(fields: dict[str, list[str]], name: str) -> str:
    return (fields.get(name) or [""])[0].strip()


def _indices(text: str) -> set[int]:
    return {int(part) for part in text.replace(" ", "").split(",") if part.isdigit()}


class Curation:
    """The curation handlers (plain functions: they run in the thread pool), rendering through the app's pages."""

    def __init__(self, pages: Pages) -> None:
        self.pages = pages
        self.catalog = pages.catalog
        self.jobs = EditJobs()

    @property
    def _root(self) -> Path:
        return Path(self.catalog.source.root)

    def _draft(self) -> tuple[Draft, list[str]]:
        return load_draft(draft_path(self._root), self.catalog.fingerprints)

    def _save(self, draft: Draft) -> None:
        save_draft(draft_path(self._root), draft)

    def _output_root(self, draft: Draft) -> Path:
        text = draft.output_root or f"{self._root.name}_curated"
        path = Path(text).expanduser()
        return path if path.is_absolute() else self._root.parent / path

    def _csrf(self, request: Request) -> tuple[str, tuple[str, bool]]:
        session = self.pages._session(request)
        return self.pages.keys.csrf_token(session[0], SCOPE), session

    def list_context(self, session: str) -> dict[str, Any]:
        """What the episodes list shows of the curation: the drop marks, the output folder, a token to post."""
        draft, stale = self._draft()
        return {
            "drop": set(draft.drop),
            "trims": draft.trims,
            "csrf": self.pages.keys.csrf_token(session, SCOPE),
            "output_root": self._output_root(draft),
            "stale": stale,
        }

    def _checked(self, request: Request, fields: dict[str, list[str]]) -> bool:
        return self.pages.keys.check_csrf(_first(fields, "csrf"), request.cookies.get(SESSION_COOKIE, ""), SCOPE)

    def page(self, request: Request, status: int = 200, **extra: Any) -> Response:
        """The curation page: the draft, the command it stands for, a preview's or a run's output."""
        draft, stale = self._draft()
        out = self._output_root(draft)
        token, session = self._csrf(request)
        lengths = {e.index: e.length for e in self.catalog.source.episodes}
        return self.pages._render(
            request,
            "curation.html",
            status=status,
            session=session,
            csrf=token,
            draft=draft,
            lengths=lengths,
            output_root=out,
            command=command_line(edit_args(self._root, draft, out, dry_run=False)),
            notices=[],
            stale=stale,
            dataset_id=self.catalog.dataset_id,
            **({"job": None, "preview": None} | extra),
        )

    def post(self, request: Request, fields: dict[str, list[str]]) -> Response:
        """Save the posted marks, then preview, write or go back to the list."""
        if not self._checked(request, fields):
            return self.pages._message(
                request,
                403,
                "not saved: the form token is missing or stale",
                "Reload the page and try again (the server may have restarted).",
            )
        draft, _ = self._draft()
        fingerprints = self.catalog.fingerprints
        if "shown" in fields:  # the episodes list: its checkboxes say the drop marks of the rows it showed
            shown = _indices(_first(fields, "shown"))
            marked = {i for i in (*draft.drop, *_indices(",".join(fields.get("drop", [])))) if i in fingerprints}
            kept_hidden = {i for i in marked if i not in shown}
            checked = _indices(",".join(fields.get("drop", []))) & shown
            hidden = set(fingerprints) - shown if _first(fields, "drop_hidden") == "1" else set()
            draft.drop = {i: fingerprints[i] for i in sorted(kept_hidden | checked | hidden)}
        if "output_root" in fields:
            draft.output_root = _first(fields, "output_root")
        self._save(draft)
        action = _first(fields, "action")
        out = self._output_root(draft)
        if action == "preview":
            code, text = preview(edit_args(self._root, draft, out, dry_run=True))
            return self.page(request, status=200 if code == 0 else 400, preview=text)
        if action == "write":
            if draft.empty:
                return self.page(request, status=400, preview="nothing is marked: drop or trim an episode first")
            job = self.jobs.start(edit_args(self._root, draft, out, dry_run=False))
            return RedirectResponse(self.pages.url(request, f"/curation/jobs/{job.number}"), status_code=303)
        target = "/curation" if action == "review" else "/?" + _first(fields, "filters")
        return RedirectResponse(self.pages.url(request, target), 303)

    def job(self, request: Request, number: int) -> Response:
        """A write's page."""
        job = self.jobs.get(number)
        if job is None:
            return self.pages._message(request, 404, "no such run", f"this server started no so101-edit run {number}")
        return self.page(request, job=job)

    def trim(self, request: Request, index: int, fields: dict[str, list[str]]) -> Response:
        """Save (or clear) the span of one episode kept."""
        back = f"/episodes/{index}"  # inside the app: _message and url add the mount's prefix
        if not self._checked(request, fields):
            return self.pages._message(
                request,
                403,
                "trim not saved: the form token is missing or stale",
                "Reload the episode page and try again.",
                back=back,
            )
        episode = next((e for e in self.catalog.source.episodes if e.index == index), None)
        if episode is None:
            return self.pages._message(request, 404, "no such episode", f"the dataset has no episode {index}")
        draft, _ = self._draft()
        action = _first(fields, "action")
        if action == "clear":
            draft.trims.pop(index, None)
        else:
            if action == "propose":
                start, stop = self.proposed(index)
            else:
                try:
                    start, stop = int(_first(fields, "start")), int(_first(fields, "stop"))
                except ValueError:
                    return self.pages._message(
                        request, 400, "trim not saved", "give the first and last frame kept as numbers", back=back
                    )
            if not 0 <= start < stop <= episode.length:
                return self.pages._message(
                    request,
                    400,
                    "trim not saved",
                    f"frames {start}:{stop} are not within 0:{episode.length}",
                    back=back,
                )
            if (start, stop) == (0, episode.length):
                draft.trims.pop(index, None)
            else:
                draft.trims[index] = (start, stop, self.catalog.fingerprints[index])
        self._save(draft)
        return RedirectResponse(self.pages.url(request, back + "#traces"), status_code=303)

    def proposed(self, index: int) -> tuple[int, int]:
        """The trim so101-edit --trim=INDEX:auto would make (the same rule, teleop/dataset/curate/trim_proposal.py)."""
        signals = self.catalog.source.signals(self.catalog.source.episode(index))
        return propose_trim(signals.state, signals.names, signals.fps)

    def episode_context(self, session: str, index: int, length: int) -> dict[str, Any]:
        """What the episode page shows of the curation: the span kept, the one proposed, a token to post."""
        draft, _ = self._draft()
        proposed = self.proposed(index)
        start, stop, _ = draft.trims.get(index, (0, length, ""))
        token = self.pages.keys.csrf_token(session, SCOPE)
        return {
            "start": start,
            "stop": stop,
            "proposed": proposed,
            "trimmed": index in draft.trims,
            "dropped": index in draft.drop,
            "csrf": token,
        }
