"""Test-wide isolation: no hub, and every cache LeRobot and Hugging Face touch in a temp dir.

These variables must be set before anything imports `lerobot` (its constants read them at import),
so they are set at conftest import time, and inherited by every child process a test starts.
"""

import json
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

from tests.support import session_files  # noqa: E402 - after the environment above, on purpose

# The next steps every command printed in this session, parsed at its end (tests/support/next_steps.py),
# in the folder every process of the session shares (xdist workers: tests/support/session_files.py).
os.environ["SO101_NEXT_STEPS_LOG"] = str(session_files.path("next_steps"))


import threading  # noqa: E402 - after the environment above, on purpose
import time  # noqa: E402

import pytest  # noqa: E402
import tqdm  # noqa: E402

# No tqdm monitor thread in the test processes. A progress bar (LeRobot loading a dataset in a test)
# starts one that lingers ~10 s, and a DatasetWriter opened meanwhile then spawns its writer (a fresh
# interpreter: ~8 s of CPU importing LeRobot) where a command, which opens it before any thread
# starts, forks it: 17 spawns in one suite run. The monitor only flags stalled bars.
tqdm.tqdm.monitor_interval = 0

from tests.support import next_steps  # noqa: E402

next_steps.watch_capture_fixtures()


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


# Tests whose in-process code left the test runner's main thread real-time (see the fixture below).
REALTIME_LEAKS = "realtime_leaks"  # the session file that names them


def _ordinary_main_thread(nodeid: str) -> None:
    """Every thread of the runner back in ordinary scheduling (threads inherit their creator's policy)."""
    if not hasattr(os, "sched_getscheduler"):
        return
    leaked = False
    for task in Path("/proc/self/task").iterdir():
        try:
            tid = int(task.name)
            if os.sched_getscheduler(tid) != os.SCHED_OTHER:
                os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
                leaked = True
        except (OSError, ValueError):  # the thread ended meanwhile
            continue
    if leaked:
        session_files.append(REALTIME_LEAKS, {"test": nodeid})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """Run each test with the runner's main thread in ordinary scheduling, whatever its fixtures did.

    As root, SVT-AV1 sets the thread that opens an encoder to SCHED_FIFO 99 and never undoes it (a
    dataset fixture encoding AV1 in this process did). The runner then busy-polled stock LeRobot's
    replies at FIFO 99, above the emulator's FIFO 9, and starved it: replies missed late in the suite.
    Threads started meanwhile inherit FIFO 99 and outlive the test (a session fixture's): they
    starved later subprocesses (a review server that did not stop in time, an AV1 recording). The
    product's own encoders run in the writer process, which demotes itself (teleop/dataset/
    privileges.py). Each occurrence is named in the terminal summary.
    """
    _ordinary_main_thread(f"the setup of {item.nodeid}")
    yield
    _ordinary_main_thread(item.nodeid)  # threads the test started and left (a session's browser driver)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest files first (tests/file_seconds.json), each file's tests kept together and in order.

    Under pytest-xdist (`--dist loadfile`) a whole file goes to one worker: handing out the long
    files first leaves the short ones to even out the end, instead of one worker finishing a long
    file alone. The Makefile passes `--no-loadscope-reorder`: xdist would otherwise hand out the
    files with the most tests first, whatever their length (a demo's 13 tests after 200 short ones).
    A file the table does not know yet comes after those it knows, end-to-end ones first.
    The table only orders: a stale one costs balance, never a result.
    """
    from tests.support.suite_profile import FILE_SECONDS

    seconds = json.loads(FILE_SECONDS.read_text()) if FILE_SECONDS.is_file() else {}
    heavy = {item.path for item in items if item.get_closest_marker("slow")}
    root = Path(__file__).parent.parent

    def rank(item: pytest.Item) -> tuple[float, bool]:
        return -seconds.get(item.path.relative_to(root).as_posix(), 0.0), item.path not in heavy

    items.sort(key=rank)  # stable: the order within each file stays


def pytest_runtest_logreport(report) -> None:
    """Log the next steps in what a test printed and did not read itself (an in-process command's output)."""
    text = "\n".join(getattr(report, name, "") for name in ("capstdout", "capstderr", "caplog"))
    next_steps.record(text, report.nodeid)


# Next-step commands printed in this session that their command's parser refuses (pytest_sessionfinish).
UNPARSED_NEXT_STEPS: list[str] = []


@pytest.fixture(scope="session")
def fresh_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five short episodes recorded on the virtual rig by so101-record, never judged (tests copy it to change it)."""
    from tests.support.commands import run
    from tests.support.record_runs import record_args, rig_file

    tmp = tmp_path_factory.mktemp("fresh")
    result = run(
        "so101-record",
        *record_args(
            tmp,
            rig_file(tmp),
            f"--session.num_episodes={FRESH_EPISODES}",
            "--session.episode_s=1.5",
            "--session.reset_s=0.3",
        ),
        timeout_s=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return tmp / "dataset"


FRESH_EPISODES = 5


def pytest_sessionfinish(session) -> None:
    """Parse every next step the session's commands printed; one that does not parse fails the run.

    A test cannot see what the whole suite printed, so the check runs here, after the last test:
    each failure is listed in the terminal summary, and the exit status becomes 1. Under xdist the
    controller checks, once every worker has logged what its tests printed.
    """
    if not session_files.is_worker():
        UNPARSED_NEXT_STEPS.extend(next_steps.check_session(session))


def pytest_terminal_summary(terminalreporter) -> None:
    """How many in-test retries fired, and in which tests (tests/support/retries.py): the release note quotes it."""
    from tests.support.retries import TALLY, summary_lines

    terminalreporter.section("in-test retries")
    for line in summary_lines(TALLY):
        terminalreporter.write_line(line)
    from tests.support.warm_start import summary_line

    terminalreporter.write_line(summary_line())
    leaks = [record["test"] for record in session_files.read(REALTIME_LEAKS)]
    if leaks:
        terminalreporter.write_line(f"main thread returned to ordinary scheduling after: {', '.join(leaks)}")
    if UNPARSED_NEXT_STEPS:
        terminalreporter.section("next steps that do not parse (the run fails: tests/support/next_steps.py)", red=True)
        for line in UNPARSED_NEXT_STEPS:
            terminalreporter.write_line(line)
