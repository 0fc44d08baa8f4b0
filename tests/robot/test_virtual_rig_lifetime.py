"""The virtual rig's processes go when asked, however the request arrives."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from robot.virtual.config import TimingMode, VirtualRigConfig, config_to_json
from robot.virtual.launcher import LAUNCHER_PID_ENV, VirtualRigProcess

pytestmark = pytest.mark.slow


def children_of(pid: int) -> list[int]:
    found = []
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        found += [int(child) for child in children.read_text().split()]
    return found


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_burst_of_sigterms_stops_the_server_and_its_bus_processes(tmp_path):
    # The kernel's parent-death signal, a launcher's terminate and a user's kill can all land at
    # once; a handler that took a lock deadlocked on its own re-entry and left the rig running.
    rig = VirtualRigProcess(VirtualRigConfig(runtime_dir=tmp_path / "run", timing=TimingMode.INSTANT))
    rig.start()
    try:
        server = rig.pid
        assert server is not None
        buses = children_of(server)
        assert len(buses) == 4
        for _ in range(20000):
            os.kill(server, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(running(pid) for pid in [server, *buses]):
            time.sleep(0.1)
        assert [pid for pid in [server, *buses] if running(pid)] == []
    finally:
        for pid in [p for p in [rig.pid, *children_of(rig.pid or 0)] if p]:
            if running(pid):
                os.kill(pid, signal.SIGKILL)
        rig.stop()


def test_a_server_whose_launcher_died_before_it_started_exits_at_once(tmp_path):
    # The launcher can be killed between starting the server and the server's parent-death request;
    # the server then has a new parent already and must notice from the launcher's pid it was given.
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a pid that no longer runs
    config = config_to_json(VirtualRigConfig(runtime_dir=tmp_path / "run", timing=TimingMode.INSTANT))
    server = subprocess.run(
        [sys.executable, "-m", "robot.virtual.server", config],
        env={**os.environ, LAUNCHER_PID_ENV: str(gone.pid)},
        capture_output=True,
        timeout=60,
    )
    assert server.returncode == -signal.SIGTERM
    assert b"READY" not in server.stdout
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())
