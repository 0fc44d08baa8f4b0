"""Peak PSS of a process tree, sampled from a process of its own so that sampling never holds the
measured loop's interpreter lock (walking a writer's ~140 encoder threads for children takes
milliseconds of Python each time).

    sampler = MemorySampler()      # samples this process and every descendant, except itself
    sampler.start()
    ...                            # the work being measured
    sampler.stop()                 # sampler.peak_mb, .peak_parts_mb (anon/file/shmem), .peak_processes

    python -m benchmarks.memory_sampler ROOT_PID [INTERVAL_S]    # samples until stdin closes, prints JSON
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys

from benchmarks.proc_stats import process_tree, pss_parts_mb

INTERVAL_S = 0.2


class MemorySampler:
    """Peak of the summed proportional set size (PSS) of this process and its descendants.

    Every sample takes the tree anew (a writer process, and any helper a library starts, such as
    multiprocessing's resource tracker). PSS shares each page among the processes mapping it, so two
    processes that map the same libraries (a forked writer and its control process) are not counted
    twice, as summed RSS would. The sampler process itself is left out.
    """

    def __init__(self, interval_s: float = INTERVAL_S) -> None:
        self.interval_s = interval_s
        self.peak_mb = 0.0
        self.peak_parts_mb: dict[str, float] = {}
        self.peak_processes = 0
        self._process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        """Start the sampler process."""
        command = [sys.executable, "-m", "benchmarks.memory_sampler", str(os.getpid()), str(self.interval_s)]
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def stop(self) -> None:
        """Stop sampling; the peak figures are final."""
        if self._process is None:
            return
        output, _ = self._process.communicate(timeout=30)  # closes its stdin: the signal to stop
        peak = json.loads(output)
        self.peak_mb, self.peak_parts_mb, self.peak_processes = peak["mb"], peak["parts_mb"], peak["processes"]


def sample_until_stdin_closes(root: int, interval_s: float) -> dict:
    """Sample the tree under `root` every `interval_s` until stdin reaches end-of-file."""
    peak = {"mb": 0.0, "parts_mb": {}, "processes": 0}
    selector = selectors.DefaultSelector()
    selector.register(sys.stdin, selectors.EVENT_READ)
    while not selector.select(interval_s):
        pids = [pid for pid in process_tree(root) if pid != os.getpid()]
        parts: dict[str, float] = {}
        for pid in pids:
            for key, value in pss_parts_mb(pid).items():
                parts[key] = parts.get(key, 0.0) + value
        if parts.get("Pss", 0.0) > peak["mb"]:
            peak["mb"] = parts["Pss"]
            peak["parts_mb"] = {key.removeprefix("Pss_").lower(): mb for key, mb in parts.items() if key != "Pss"}
            peak["processes"] = len(pids)
    return peak


def main() -> None:
    root = int(sys.argv[1])
    interval_s = float(sys.argv[2]) if len(sys.argv) > 2 else INTERVAL_S
    print(json.dumps(sample_until_stdin_closes(root, interval_s)))


if __name__ == "__main__":
    main()
