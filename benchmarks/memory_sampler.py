"""Peak PSS of a process tree, sampled from a process of its own so that sampling never holds the
measured loop's interpreter lock (walking a writer's ~140 encoder threads for children takes
milliseconds of Python each time).

    sampler = MemorySampler()      # samples this process and every descendant, except itself
    sampler.start()
    ...                            # the work being measured
    sampler.stop()                 # sampler.peak_mb, .peak_parts_mb (anon/file/shmem), .peak_processes,
                                   # .series: (time.monotonic() s, summed PSS MB) of every sample

    python -m benchmarks.memory_sampler ROOT_PID [INTERVAL_S [EXCLUDED_PID ...]]   # "ready", then JSON at stdin's end
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.proc_stats import process_tree, pss_parts_mb

INTERVAL_S = 0.2


class MemorySampler:
    """Peak of the summed proportional set size (PSS) of this process and its descendants.

    Every sample takes the tree anew (a writer process, and any helper a library starts, such as
    multiprocessing's resource tracker). PSS shares each page among the processes mapping it, so two
    processes that map the same libraries (a forked writer and its control process) are not counted
    twice, as summed RSS would. The sampler process itself is left out.
    """

    def __init__(self, interval_s: float = INTERVAL_S, exclude: list[int] | None = None) -> None:
        self.interval_s = interval_s
        self.exclude = exclude or []  # processes (with their descendants) that are not the recorder's
        self.peak_mb = 0.0
        self.peak_parts_mb: dict[str, float] = {}
        self.peak_processes = 0
        self.peak_by_process_mb: dict[str, dict[str, float]] = {}  # each process's PSS parts at the peak
        # Every sample as (time.monotonic() s, summed PSS MB): the monotonic clock is the machine's,
        # so the measured process can place its own events (episodes) on this timeline.
        self.series: list[tuple[float, float]] = []
        self._process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        """Start the sampler process; returns once it has taken its first sample."""
        command = [sys.executable, "-m", "benchmarks.memory_sampler", str(os.getpid()), str(self.interval_s)]
        command += [str(pid) for pid in self.exclude]
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        stdout = self._process.stdout
        if stdout is None or stdout.readline().strip() != "ready":
            self._process.kill()
            raise RuntimeError("the memory sampler process did not start (see its stderr)")

    def stop(self) -> None:
        """Stop sampling; the peak figures are final."""
        if self._process is None:
            return
        output, _ = self._process.communicate(timeout=30)  # closes its stdin: the signal to stop
        peak = json.loads(output)
        self.peak_mb, self.peak_parts_mb, self.peak_processes = peak["mb"], peak["parts_mb"], peak["processes"]
        self.peak_by_process_mb = peak.get("by_process_mb", {})
        self.series = [(t, mb) for t, mb in peak.get("series", [])]


def sample_until_stdin_closes(root: int, interval_s: float, exclude: list[int], ready=lambda: None) -> dict:
    """Sample the tree under `root`, less the trees under `exclude`, every `interval_s` until stdin ends.

    One sample at once (then `ready()`), one every `interval_s`, and a last one when stdin ends:
    the timeline covers the whole span between start and stop, however late this process ran.
    """
    peak: dict = {"mb": 0.0, "parts_mb": {}, "processes": 0, "series": []}
    selector = selectors.DefaultSelector()
    selector.register(sys.stdin, selectors.EVENT_READ)
    _sample(root, exclude, peak)
    ready()
    while not selector.select(interval_s):
        _sample(root, exclude, peak)
    _sample(root, exclude, peak)
    return peak


def _sample(root: int, exclude: list[int], peak: dict) -> None:
    """One sample of the tree's summed PSS into `peak` (its series, and its peak figures if higher)."""
    left_out = {os.getpid(), *(pid for top in exclude for pid in process_tree(top))}
    pids = [pid for pid in process_tree(root) if pid not in left_out]
    parts: dict[str, float] = {}
    each = {pid: pss_parts_mb(pid) for pid in pids}
    for values in each.values():
        for key, value in values.items():
            parts[key] = parts.get(key, 0.0) + value
    peak["series"].append((round(time.monotonic(), 3), round(parts.get("Pss", 0.0), 1)))
    if parts.get("Pss", 0.0) > peak["mb"]:
        peak["mb"] = parts["Pss"]
        peak["parts_mb"] = {key.removeprefix("Pss_").lower(): mb for key, mb in parts.items() if key != "Pss"}
        peak["processes"] = len(pids)
        peak["by_process_mb"] = {_name(pid): values for pid, values in each.items()}


def peaks_within(series: list[tuple[float, float]], spans: list[tuple[float, float]]) -> list[float | None]:
    """The highest sample of `series` inside each (start_s, end_s) span; None where none fell inside."""
    peaks: list[float | None] = []
    for start_s, end_s in spans:
        inside = [mb for t, mb in series if start_s <= t <= end_s]
        peaks.append(max(inside) if inside else None)
    return peaks


def sampler_check(block_mb: int = 80, interval_s: float = 0.05) -> dict:
    """How much of a `block_mb` allocation the sampler sees: its timeline's peak while a block of that
    size is held, less its peak before. A benchmark's memory figures are only as good as this; the
    ratio (seen ÷ allocated, about 1) belongs beside them in the same run. Takes about 1.5 s.
    """
    sampler = MemorySampler(interval_s=interval_s)
    sampler.start()
    time.sleep(0.5)
    before_s = time.monotonic()
    block = bytearray(block_mb * 1024 * 1024)  # zero-filled by calloc: touch every page so it is resident
    for offset in range(0, len(block), 4096):
        block[offset] = 1
    time.sleep(0.6)
    after_s = time.monotonic()
    del block
    time.sleep(0.3)
    sampler.stop()
    first_s = sampler.series[0][0] if sampler.series else before_s
    held, idle = peaks_within(sampler.series, [(before_s + 0.2, after_s), (first_s, before_s)])
    seen = None if held is None or idle is None else round(held - idle, 1)
    ratio = None if seen is None else round(seen / block_mb, 3)
    return {"allocated_mb": block_mb, "seen_mb": seen, "seen_ratio": ratio}


def _name(pid: int) -> str:
    """`pid` with its command name (a writer process is named so101-dataset-writer)."""
    try:
        return f"{pid} {Path(f'/proc/{pid}/comm').read_text().strip()}"
    except OSError:
        return str(pid)


def main() -> None:
    root = int(sys.argv[1])
    interval_s = float(sys.argv[2]) if len(sys.argv) > 2 else INTERVAL_S
    exclude = [int(pid) for pid in sys.argv[3:]]
    print(json.dumps(sample_until_stdin_closes(root, interval_s, exclude, ready=lambda: print("ready", flush=True))))


if __name__ == "__main__":
    main()
