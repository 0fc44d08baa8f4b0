"""`make test`'s worker count: one per idle core plus one, at most three (tests/support/worker_count.py)."""

import subprocess
import sys

from tests.support.worker_count import MAX_WORKERS, idle_cores, workers


def test_one_worker_per_idle_core_plus_one_within_bounds():
    assert [workers(idle) for idle in (0.0, 0.4, 1.0, 1.6, 2.0, 16.0)] == [1, 1, 2, 3, 3, MAX_WORKERS]


def test_the_idle_cores_are_measured_within_the_machines_cores():
    import os

    assert 0.0 <= idle_cores(0.2) <= (os.cpu_count() or 1) + 1e-9


def test_the_makefile_reads_one_number():
    printed = subprocess.run(
        [sys.executable, "-m", "tests.support.worker_count"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert printed.strip() in {str(n) for n in range(1, MAX_WORKERS + 1)}
