"""Where the suite's time goes: a pytest plugin that writes a profile by file, by fixture and by kind.

    .venv/bin/python -m pytest -n 2 --suite-profile=outputs/suite-profile.json   # (pyproject loads this plugin)
    .venv/bin/python -m tests.support.suite_profile outputs/suite-profile.json   # the tables tests/README.md quotes
    .venv/bin/python -m tests.support.suite_profile outputs/suite-profile.json --write-file-seconds
        # refresh tests/file_seconds.json, the order conftest.py hands files to the workers in

By file: setup + call + teardown of each test, summed over the file's tests (a session fixture's
setup counts where it first ran). By fixture: each fixture's setup time, summed over its setups. By
kind: wall time the test process spent inside the calls that a kind names (they nest in tests and
fixtures, and a kind can nest in another: an export inside a checkpoint fixture):
    command <name>   a product command run to its end, or held as a foreground job (tests/support/commands.py)
    emulator start   a virtual rig process until it is ready (in this process, or so101-sim's READY line)
    model export     SmolVLA's graphs traced and written (policies.compiled.export)
    tiny checkpoint  a tiny ACT/SmolVLA/VLM written offline (policies.testing.tiny_policies)
    synthetic data   a dataset written without the rig (evaluation.testing, tests.teleop.dataset.helpers)
    browser          headless Chromium launched by Playwright
Under pytest-xdist each worker writes its part beside the file and the controller merges them.
"""

import functools
import importlib
import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# (module, attribute, kind): a callable timed as `kind`; "{0}" is the command name (first argument).
_TIMED: tuple[tuple[str, str, str], ...] = (
    ("tests.support.commands", "run", "command {0}"),
    ("robot.virtual.launcher", "VirtualRigProcess.start", "emulator start"),
    ("tests.support.commands", "SimProcess._read_ready", "emulator start"),
    ("policies.compiled.export", "export_graphs", "model export"),
    ("policies.compiled.export", "quantize_int8", "model export"),
    ("policies.testing.tiny_policies", "write_tiny_act", "tiny checkpoint"),
    ("policies.testing.tiny_policies", "write_tiny_smolvla", "tiny checkpoint"),
    ("policies.testing.tiny_policies", "write_tiny_vlm", "tiny checkpoint"),
    ("evaluation.testing.synthetic_dataset", "write_synthetic_dataset", "synthetic data"),
    ("tests.teleop.dataset.helpers", "write_lerobot_dataset", "synthetic data"),
    ("playwright._impl._browser_type", "BrowserType.launch", "browser"),
)


class _Profile:
    def __init__(self) -> None:
        self.by_test: dict[str, float] = defaultdict(float)
        self.by_fixture: dict[str, float] = defaultdict(float)
        self.fixture_setups: dict[str, int] = defaultdict(int)
        self.by_kind: dict[str, float] = defaultdict(float)
        self.kind_calls: dict[str, int] = defaultdict(int)
        self.started_s = time.monotonic()

    def as_json(self) -> dict[str, Any]:
        return {
            "wall_s": time.monotonic() - self.started_s,
            "tests": dict(self.by_test),
            "fixtures": {name: [s, self.fixture_setups[name]] for name, s in self.by_fixture.items()},
            "kinds": {name: [s, self.kind_calls[name]] for name, s in self.by_kind.items()},
        }


PROFILE = _Profile()


def _timed(function: Callable[..., Any], kind: str) -> Callable[..., Any]:
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        name = kind.format(*(str(a) for a in args[:1])) if "{0}" in kind else kind
        started = time.monotonic()
        try:
            return function(*args, **kwargs)
        finally:
            PROFILE.by_kind[name] += time.monotonic() - started
            PROFILE.kind_calls[name] += 1

    return wrapper


def _install_timers() -> None:
    for module_name, attribute, kind in _TIMED:
        try:
            owner: Any = importlib.import_module(module_name)
        except ImportError:
            continue
        *path, name = attribute.split(".")
        for part in path:
            owner = getattr(owner, part)
        setattr(owner, name, _timed(getattr(owner, name), kind))
    _time_foreground_jobs()


def _time_foreground_jobs() -> None:
    """A ForegroundJob counts from its start to its end (finish or kill), as `command <name>`."""
    from tests.support import commands

    job = commands.ForegroundJob
    original_init, original_log = job.__init__, job._log_next_steps

    def init(self: Any, name: str, *args: Any, **kwargs: Any) -> None:
        self._profile_started_s = time.monotonic()
        original_init(self, name, *args, **kwargs)

    def log(self: Any) -> None:
        if not self._logged:
            PROFILE.by_kind[f"command {self._name}"] += time.monotonic() - self._profile_started_s
            PROFILE.kind_calls[f"command {self._name}"] += 1
        original_log(self)

    job.__init__, job._log_next_steps = init, log


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--suite-profile", default=None, help="write where the suite's time went to this JSON file")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--suite-profile"):
        _install_timers()


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: Any, request: Any):
    started = time.monotonic()
    yield
    PROFILE.by_fixture[f"{fixturedef.argname} ({fixturedef.scope})"] += time.monotonic() - started
    PROFILE.fixture_setups[f"{fixturedef.argname} ({fixturedef.scope})"] += 1


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    PROFILE.by_test[report.nodeid] += report.duration


@pytest.hookimpl(tryfirst=True)  # a worker's part is written before xdist reports the worker finished
def pytest_sessionfinish(session: pytest.Session) -> None:
    target = session.config.getoption("--suite-profile")
    if not target:
        return
    target = Path(target)
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        target.with_name(f"{target.name}.{worker}").write_text(json.dumps(PROFILE.as_json()))
        return
    merged = PROFILE.as_json()
    for part in sorted(target.parent.glob(f"{target.name}.gw*")):
        data = json.loads(part.read_text())
        merged["tests"].update(data["tests"])
        for section in ("fixtures", "kinds"):
            for name, (seconds, count) in data[section].items():
                have = merged[section].setdefault(name, [0.0, 0])
                have[0] += seconds
                have[1] += count
        part.unlink()
    target.write_text(json.dumps(merged, indent=1) + "\n")


def render(profile: dict[str, Any], top: int = 15) -> str:
    """Markdown tables: the run's wall time, then the top files, fixtures and kinds by time."""
    by_file: dict[str, float] = defaultdict(float)
    for nodeid, seconds in profile["tests"].items():
        by_file[nodeid.split("::")[0]] += seconds
    total = sum(by_file.values())
    lines = [f"wall {profile['wall_s']:.0f} s; {len(profile['tests'])} tests; {total:.0f} s in tests", ""]
    lines += ["| file | s | share |", "|---|---:|---:|"]
    for name, seconds in sorted(by_file.items(), key=lambda kv: -kv[1])[:top]:
        lines.append(f"| {name} | {seconds:.0f} | {seconds / total:.0%} |")
    lines += ["", "| fixture (scope) | setups | s |", "|---|---:|---:|"]
    for name, (seconds, count) in sorted(profile["fixtures"].items(), key=lambda kv: -kv[1][0])[:top]:
        lines.append(f"| {name} | {count} | {seconds:.0f} |")
    lines += ["", "| kind | calls | s |", "|---|---:|---:|"]
    for name, (seconds, count) in sorted(profile["kinds"].items(), key=lambda kv: -kv[1][0]):
        lines.append(f"| {name} | {count} | {seconds:.0f} |")
    return "\n".join(lines)


FILE_SECONDS = Path(__file__).parents[1] / "file_seconds.json"


def file_seconds(profile: dict[str, Any]) -> dict[str, float]:
    """Each test file's seconds in `profile`, longest first (what tests/file_seconds.json holds)."""
    by_file: dict[str, float] = defaultdict(float)
    for nodeid, seconds in profile["tests"].items():
        by_file[nodeid.split("::")[0]] += seconds
    return {name: round(seconds, 1) for name, seconds in sorted(by_file.items(), key=lambda kv: -kv[1])}


def main(argv: list[str]) -> None:
    profile = json.loads(Path(argv[0]).read_text())
    if "--write-file-seconds" in argv:
        FILE_SECONDS.write_text(json.dumps(file_seconds(profile), indent=1) + "\n")
        print(f"wrote {FILE_SECONDS}")
        return
    print(render(profile))


if __name__ == "__main__":
    main(sys.argv[1:])
