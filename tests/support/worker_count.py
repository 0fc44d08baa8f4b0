"""How many pytest-xdist workers `make test` starts: one per idle core plus one, never more than cores, at most three.

The suite waits on real time for part of its run (episodes at 30 FPS, arms resting at a bounded
speed), so a worker more than the idle cores once filled the gaps: on the project's quiet 2-core
machine three workers took 791 s of pytest against 904 s for two. That stopped holding as the
real-time tests grew (a studio session drives Chromium, a recording and the virtual rig at once)
and the machine slowed: on 2026-12-07, quiet, three workers took 2,025 s with 21 tests failing on
time (a demo past its 600 s, writers that fell behind, emulators that missed replies), so a worker
per core is the most. The count follows the cores that are idle when the suite starts, sampled from
/proc/stat over one second. `make test TEST_WORKERS=N` sets it by hand.
"""

import os
import time

MAX_WORKERS = 3
SAMPLE_S = 1.0


def _cpu_times() -> tuple[int, int]:
    """(idle, total) jiffies of all cores together since boot."""
    with open("/proc/stat") as stat:
        fields = [int(value) for value in stat.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return idle, sum(fields)


def idle_cores(sample_s: float = SAMPLE_S) -> float:
    """How many cores were idle over `sample_s` seconds."""
    idle0, total0 = _cpu_times()
    time.sleep(sample_s)
    idle1, total1 = _cpu_times()
    return (os.cpu_count() or 1) * (idle1 - idle0) / max(1, total1 - total0)


def workers(idle: float) -> int:
    """One per idle core, plus one, between 1 and the machine's cores (at most MAX_WORKERS)."""
    cores = os.cpu_count() or 1
    return max(1, min(MAX_WORKERS, cores, round(idle) + 1))


if __name__ == "__main__":
    try:
        print(workers(idle_cores()))
    except OSError:  # no /proc: the count measured on the project's machine with one core busy
        print(2)
