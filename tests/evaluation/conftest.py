"""Fixtures of the evaluation tests: one small synthetic dataset per session, a loopback Messages API, a browser.

One headless Chromium serves every page test of a session (report and review): Playwright's sync API
allows one driver per thread, so a test that started its own beside the session's failed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright

from evaluation.testing.fake_messages_server import FakeMessagesServer
from evaluation.testing.synthetic_dataset import write_synthetic_dataset
from tests.evaluation.judge.judge_testkit import FRAMES_PER_EPISODE, SCENARIOS


@pytest.fixture(scope="session")
def dataset_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finalised 5-episode dataset (96x128 video, 3 s per episode). Read-only: do not modify."""
    return write_synthetic_dataset(tmp_path_factory.mktemp("datasets") / "fold_virtual", SCENARIOS, FRAMES_PER_EPISODE)


@pytest.fixture
def server() -> Iterator[FakeMessagesServer]:
    """A loopback Messages API that rejects any request the judge must not send."""
    with FakeMessagesServer(expected_model="claude-sonnet-5-5") as fake:
        yield fake


CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """The distribution's headless Chromium driven by Playwright (never a downloaded browser)."""
    if not CHROMIUM.exists():
        pytest.skip("browser tests need /usr/bin/chromium: run .ci/install_chromium.sh")
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()
