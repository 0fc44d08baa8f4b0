"""The review page's health view of the dataset it serves.

    GET  /health        each check: what it checks, how many passed, its findings linked to their episodes
    GET  /health.json   the same report as JSON (health.HealthReport.to_json)

The report is computed on the first request and kept: the app serves one opened dataset, and the
checks read every episode (seconds for hundreds). A lock makes concurrent first requests compute it once.
"""

from __future__ import annotations

import threading

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from evaluation.review.curation_pages import Pages
from evaluation.review.health import HealthReport, dataset_health
from evaluation.review.health_checks import SEVERITIES


def add_health_routes(app: FastAPI, pages: Pages) -> None:
    """Mount the health routes on `app`, rendering through its pages."""
    health = HealthView(pages)

    @app.get("/health")
    def show(request: Request) -> Response:  # plain function: the first one runs the checks in the thread pool
        report = health.report()
        return pages._render(
            request, "health.html", report=report, severities=SEVERITIES, dataset_id=pages.catalog.dataset_id
        )

    @app.get("/health.json")
    def as_json() -> Response:
        return JSONResponse(health.report().to_json(), headers={"Cache-Control": "no-store"})


class HealthView:
    """The served dataset's health report, computed once on first use; thread-safe."""

    def __init__(self, pages: Pages) -> None:
        self.pages = pages
        self._report: HealthReport | None = None
        self._lock = threading.Lock()

    def report(self) -> HealthReport:
        """The report (blocks while the first call computes it)."""
        with self._lock:
            if self._report is None:
                self._report = dataset_health(self.pages.catalog.source)
            return self._report
