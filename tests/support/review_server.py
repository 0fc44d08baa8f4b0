"""The review app served for a test: over a dataset and a store, on a free loopback port."""

import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from evaluation.episode_source import open_dataset
from evaluation.overrides import OverrideStore
from evaluation.review.app import ReviewSettings, create_app
from evaluation.review.catalog import ReviewCatalog
from evaluation.review.config import AuditConfig
from evaluation.review.server import ReviewServer
from evaluation.store import EvaluationStore

ROOT = Path(__file__).resolve().parents[2]  # the repository: `python -m evaluation...` runs from there


@contextmanager
def serving(
    dataset_root: Path,
    store_path: Path,
    *,
    reviewer: str = "tester",
    token: str = "",
    audit: AuditConfig | None = None,
    views: dict[str, str] | None = None,
) -> Iterator[ReviewServer]:
    """The review app over a dataset and store, served on 127.0.0.1 (free port) in a thread."""
    source = open_dataset(dataset_root, views=views)
    with EvaluationStore(store_path) as store, OverrideStore(store) as overrides:
        catalog = ReviewCatalog(source, store, audit or AuditConfig())
        app = create_app(
            catalog, overrides, ReviewSettings(reviewer=reviewer, access_token=token, check_host=not token)
        )
        with ReviewServer(app, "127.0.0.1", 0) as server:
            yield server


class ReviewProcess:
    """so101-review started through its entry point in a child process, its output read line by line."""

    def __init__(
        self, *options: str, env: dict[str, str] | None = None, preexec_fn: Callable[[], None] | None = None
    ) -> None:
        args = [sys.executable, "-m", "evaluation.commands.review", *options]
        env = os.environ | {"PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"} | (env or {})
        self.proc = subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=preexec_fn
        )
        self.lines: list[str] = []
        self._announced = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            self.lines.append(line)
            if "review page:" in line:
                self._announced.set()

    def url(self, timeout_s: float = 120.0) -> str:
        """The page's URL as printed (with its token), once the server says it serves."""
        assert self._announced.wait(timeout=timeout_s), "".join(self.lines)
        return next(re.search(r"http://\S+", line).group(0) for line in self.lines if "review page:" in line)

    @property
    def output(self) -> str:
        """Everything it printed so far."""
        return "".join(self.lines)
