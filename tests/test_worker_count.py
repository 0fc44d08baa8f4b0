"""`make test`'s worker count: one per idle core plus one, never more than cores (tests/support/worker_count.py)."""

import os
import subprocess
import sys

from tests.support.worker_count import MAX_WORKERS, idle_cores, workers


def test_one_worker_per_idle_core_plus_one_within_bounds(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert [workers(idle) for idle in (0.0, 0.4, 1.0, 1.6, 2.0, 16.0)] == [1, 1, 2, 3, 3, MAX_WORKERS]


def test_never_more_workers_than_cores(monkeypatch):
    # Each worker's real-time tests (a rig's loop, its emulators, a writer) want a core of their own.
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert [workers(idle) for idle in (0.0, 1.0, 2.0)] == [1, 2, 2]


def test_the_idle_cores_are_measured_within_the_machines_cores():
    assert 0.0 <= idle_cores(0.2) <= (os.cpu_count() or 1) + 1e-9


def test_the_makefile_reads_one_number():
    printed = subprocess.run(
        [sys.executable, "-m", "tests.support.worker_count"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert printed.strip() in {str(n) for n in range(1, MAX_WORKERS + 1)}
