"""Fixtures of the review tests: a judged store (real judge run against the loopback API), copied per test."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from evaluation.episode_source import open_dataset
from evaluation.judge.run import run_judge
from evaluation.overrides import OverrideStore
from evaluation.review.app import ReviewSettings, create_app
from evaluation.review.catalog import ReviewCatalog
from evaluation.review.config import AuditConfig
from evaluation.review.server import ReviewServer
from evaluation.rubric import load_rubric
from evaluation.store import APPEND_ONLY_TABLES, EvaluationStore
from evaluation.testing.fake_api_script import Reply
from evaluation.testing.fake_messages_server import FakeMessagesServer
from tests.evaluation.judge.judge_testkit import judge_client, judge_config

# Judge scores per episode and sample (R1, R2, R3). Routed: episode 0 on R3 (2 of 3 samples agree on 0.5),
# episode 2 on R2 (one sample says uncertain), episode 4 on R3 (the motion heuristic saw a push).
JUDGE_SCRIPT = {
    0: ((1, 1, 0.5), (1, 1, 1), (1, 1, 0.5)),
    1: ((0, 0, 0),) * 3,
    2: ((0.5, 0.5, 0),) * 3,
    3: ((1, 1, 0),) * 3,
    4: ((1, 1, 0),) * 3,
}
UNCERTAIN = {(2, 1): ("R2",)}  # (episode, sample) -> criteria that sample marks uncertain
ROUTED = (0, 2, 4)


@pytest.fixture(scope="session")
def judged_store_template(dataset_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding one real judge run (3 samples per episode, tag "smolvla") of the 5-episode dataset."""
    path = tmp_path_factory.mktemp("judged") / "fold_virtual.evaluation.sqlite"
    with FakeMessagesServer(expected_model="claude-sonnet-5-5") as server:
        for episode, samples in JUDGE_SCRIPT.items():
            replies = [
                Reply(scores=tuple(zip(("R1", "R2", "R3"), s, strict=True)), uncertain=UNCERTAIN.get((episode, k), ()))
                for k, s in enumerate(samples)
            ]
            server.script(*replies, episode=episode)
        config = judge_config(dataset_root, path, samples=3, concurrency=2, tag="smolvla")
        with EvaluationStore(path) as store:
            summary = run_judge(open_dataset(dataset_root), load_rubric(), config, store, judge_client(server))
        assert server.problems() == []
    assert summary.scored == 5
    return path


@pytest.fixture
def judged_store(judged_store_template: Path, tmp_path: Path) -> Path:
    """A private copy of the judged store (tests append overrides to it)."""
    path = tmp_path / judged_store_template.name
    shutil.copy(judged_store_template, path)
    return path


@contextmanager
def serving(
    dataset_root: Path, store_path: Path, *, reviewer: str = "tester", token: str = "", audit: AuditConfig | None = None
) -> Iterator[ReviewServer]:
    """The review app over a dataset and store, served on 127.0.0.1 (free port) in a thread."""
    source = open_dataset(dataset_root)
    with EvaluationStore(store_path) as store, OverrideStore(store) as overrides:
        catalog = ReviewCatalog(source, store, audit or AuditConfig())
        app = create_app(
            catalog, overrides, ReviewSettings(reviewer=reviewer, access_token=token, check_host=not token)
        )
        with ReviewServer(app, "127.0.0.1", 0) as server:
            yield server


@pytest.fixture
def review_server(dataset_root: Path, judged_store: Path) -> Iterator[ReviewServer]:
    """The app over the 5-episode dataset and a private judged store, reviewer "tester"."""
    with serving(dataset_root, judged_store) as server:
        yield server


CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """The distribution's headless Chromium driven by Playwright (never a downloaded browser)."""
    if not CHROMIUM.exists():
        pytest.skip("browser tests need /usr/bin/chromium: run .ci/install_chromium.sh")
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@dataclass
class PageProblems:
    """Console errors, uncaught exceptions and failed page requests seen by a page."""

    errors: list[str] = field(default_factory=list)

    def watch(self, page: Page) -> Page:
        page.on("console", lambda m: self.errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        page.on(
            "response",
            lambda r: self.errors.append(f"HTTP {r.status} {r.url}") if r.status >= 400 else None,
        )
        return page


def judge_tables(path: Path) -> dict[str, list[tuple]]:
    """Every row of the judge's append-only tables (to show they are untouched)."""
    raw = sqlite3.connect(path)
    try:
        return {t: raw.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in APPEND_ONLY_TABLES}
    finally:
        raw.close()
