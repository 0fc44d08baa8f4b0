"""How many pytest-xdist workers `make test` starts: one per idle core, plus one, at most three.

The suite waits on real time for about a third of its run (episodes at 30 FPS, arms resting at a
bounded speed), so on the project's quiet 2-core machine a third worker fills the idle core: measured
there, three workers took 791 s of pytest against 904 s for two. With one core kept busy the third
worker only adds contention (1,084 s against 993 s for two), so the count follows the cores that are
idle when the suite starts, sampled from /proc/stat over one second. More than three is unmeasured.
`make test TEST_WORKERS=N` sets it by hand.
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
    """One per idle core, plus one, between 1 and MAX_WORKERS."""
    return max(1, min(MAX_WORKERS, round(idle) + 1))


if __name__ == "__main__":
    try:
        print(workers(idle_cores()))
    except OSError:  # no /proc: the count measured on the project's machine with one core busy
        print(2)
