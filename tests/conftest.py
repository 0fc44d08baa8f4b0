"""Test-wide isolation: no hub, and every cache LeRobot and Hugging Face touch in a temp dir.

These variables must be set before anything imports `lerobot` (its constants read them at import),
so they are set at conftest import time, and inherited by every child process a test starts.
"""

import os
import tempfile
from pathlib import Path

_CACHE_ROOT = Path(tempfile.mkdtemp(prefix="so101-tests-"))
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_HOME"] = str(_CACHE_ROOT / "hf")
os.environ["HF_LEROBOT_HOME"] = str(_CACHE_ROOT / "lerobot")
os.environ["HF_LEROBOT_CALIBRATION"] = str(_CACHE_ROOT / "calibration")
os.environ.setdefault("XDG_RUNTIME_DIR", str(_CACHE_ROOT / "run"))
Path(os.environ["XDG_RUNTIME_DIR"]).mkdir(parents=True, exist_ok=True)
# No key from the developer's shell may reach a test by accident.
os.environ.pop("ANTHROPIC_API_KEY", None)


import threading  # noqa: E402 - after the environment above, on purpose
import time  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def no_leftover_capture_threads():
    """A test must close the cameras it opens: a capture thread left running aborts the interpreter
    at exit (OpenCV's thread pool is torn down under it) and leaks CPU into later tests."""
    before = {t.ident for t in threading.enumerate()}
    yield
    deadline = time.monotonic() + 2.0
    while True:
        left = [t.name for t in threading.enumerate() if t.name.startswith("camera-") and t.ident not in before]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert not left, f"camera threads still running after the test: {left}"


def pytest_terminal_summary(terminalreporter) -> None:
    """How many in-test retries fired, and in which tests (tests/retries.py): the release note quotes it."""
    from tests.retries import TALLY, summary_lines

    terminalreporter.section("in-test retries")
    for line in summary_lines(TALLY):
        terminalreporter.write_line(line)
