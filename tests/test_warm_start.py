"""The warm-start server's children are the commands as an exec starts them (tests/support/warm_start.py)."""

import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.support import warm_start
from tests.support.commands import ForegroundJob, run, script

pytestmark = pytest.mark.slow  # a server importing torch and LeRobot, and commands started both ways


@pytest.fixture(autouse=True)
def warm(monkeypatch):
    """These tests are about the server: they hold when the run asks every other command to exec."""
    monkeypatch.delenv(warm_start.COLD_START_ENV, raising=False)


def test_a_forked_command_prints_and_exits_as_the_executed_one(tmp_path, monkeypatch):
    missing = f"--config_path={tmp_path / 'nowhere.yaml'}"
    forked = run("so101-doctor", missing)
    monkeypatch.setenv(warm_start.COLD_START_ENV, "1")
    executed = run("so101-doctor", missing)
    assert forked.returncode == executed.returncode == 2
    assert forked.stdout == executed.stdout
    assert forked.stderr == executed.stderr
    assert "nowhere.yaml" in forked.stderr


def test_a_variable_read_at_import_gets_a_real_exec():
    assert warm_start.needs_exec(os.environ | {"COLUMNS": "80", "SO101_X": "1"}) is None
    assert "HF_HOME" in warm_start.needs_exec(os.environ | {"HF_HOME": "/elsewhere"})


def test_a_forked_job_has_the_command_line_and_ends_by_sigint_like_a_started_one(tmp_path):
    rig = tmp_path / "rig.yaml"  # so101-sim waits for Ctrl-C once its rig is up
    rig.write_text(f"id: warm\nvirtual:\n  runtime_dir: {tmp_path / 'run'}\n  timing: instant\n")
    with ForegroundJob("so101-sim", f"--config_path={rig}", "--json=true") as job:
        assert isinstance(job.process, warm_start.WarmProcess)
        job.wait_for('"control"', timeout_s=120)
        cmdline = Path(f"/proc/{job.process.pid}/cmdline").read_bytes().decode()
        assert f"{script('so101-sim')} --config_path={rig}" in cmdline
        assert Path(f"/proc/{job.process.pid}/comm").read_text().strip() == "so101-sim"
        assert os.getpgid(job.process.pid) == job.process.pid  # a session and process group of its own
        job.signal_group(signal.SIGINT)
        assert job.finish(timeout_s=60) == 0


def test_a_timeout_kills_the_forked_command(tmp_path):
    rig = tmp_path / "rig.yaml"
    rig.write_text(f"id: warm\nvirtual:\n  runtime_dir: {tmp_path / 'run'}\n  timing: instant\n")
    with pytest.raises(subprocess.TimeoutExpired):
        run("so101-sim", f"--config_path={rig}", timeout_s=5)
