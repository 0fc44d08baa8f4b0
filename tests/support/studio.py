"""so101-studio served for a test on a free loopback port, and a browser tab's requests without a browser."""

import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from evaluation.review.server import ReviewServer
from evaluation.studio.actions import Place
from evaluation.studio.app import create_app
from evaluation.studio.control import ControlLease
from evaluation.studio.jobs import Job
from evaluation.studio.studio import Studio

# A recording's form as the tests fill it: short episodes, h264, and an episode that misses its quality
# gates kept with a mark instead of recorded again. The studio is these tests' subject, not the gates: on
# a loaded 2-core machine a take lost frames now and then, and its automatic second take broke the
# steps the test counts (the gates' own decisions are tests/teleop/test_session*.py's subject).
RECORD_FORM = {
    "dataset": "fold",
    "task": "Fold the cloth",
    "episode_s": "20",
    "reset_s": "0.5",
    "vcodec": "h264",
    "more": "--gates.on_fail=keep",
}


@contextmanager
def studio_at(workspace: Path, rig: Path | None, *, lapse_s: float = 60.0) -> Iterator[tuple[Studio, str]]:
    """The studio over a workspace and rig file, served; every job stopped (Ctrl-C) on the way out."""
    studio = Studio(Place(workspace, rig), ControlLease(lapse_s))
    app = create_app(studio, reviewer="tester")
    studio.start()
    try:
        with ReviewServer(app, "127.0.0.1", 0) as server:
            yield studio, server.url
    finally:
        studio.close(timeout_s=60)
        app.state.mounts.close()


class Tab:
    """What one browser tab of the studio sends: its tab id, its page's CSRF token and session cookie."""

    def __init__(self, url: str, tab: str) -> None:
        self.client = httpx.Client(base_url=url, timeout=30)
        page = self.client.get("/").text
        found = re.search(r'name="studio-csrf" content="([^"]+)"', page)
        assert found, page[:500]
        self.headers = {"X-Studio-CSRF": found.group(1), "X-Studio-Tab": tab}

    def post(self, path: str, body: dict | None = None) -> httpx.Response:
        return self.client.post(path, json=body or {}, headers=self.headers)

    def state(self) -> dict:
        """A poll, as the page makes every half second (it keeps a controller's lease)."""
        return self.client.get("/state.json", headers=self.headers).json()

    def watch(self, job: Job, found: Callable[[str], bool], timeout_s: float, what: str) -> None:
        """Poll as an open page does until the job's output shows `found` (fails naming `what`)."""
        deadline = time.monotonic() + timeout_s
        while not found(job.text()):
            assert job.running, f"job {job.number} ended before {what}: {job.text()[-3000:]}"
            assert time.monotonic() < deadline, f"no {what} within {timeout_s} s: {job.text()[-3000:]}"
            self.state()
            time.sleep(0.3)
