"""What the benchmarks read from /proc: CPU time, scheduling classes, children, and a per-condition meter."""

from __future__ import annotations

import contextlib
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from robot.cameras.errors import CameraError

if TYPE_CHECKING:
    from robot.cameras.camera import Camera

SCHED_NAMES = {0: "TS", 1: "FF", 2: "RR", 3: "B", 5: "IDL", 6: "DLN"}


def thread_classes(pid: int) -> dict[str, int]:
    """How many of a process's threads run under each scheduling policy (ps's CLS names)."""
    counts: dict[str, int] = {}
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            name = SCHED_NAMES.get(int(fields[38]), fields[38])
            if name in ("FF", "RR"):
                name += f"/{fields[37]}"  # with its real-time priority
            counts[name] = counts.get(name, 0) + 1
    return counts


def child_pid(needle: str) -> int | None:
    """A child of this process whose command line contains `needle`."""
    for children in Path(f"/proc/{os.getpid()}/task").glob("*/children"):
        for pid in children.read_text().split():
            with contextlib.suppress(OSError):
                if needle in Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " "):
                    return int(pid)
    return None


def process_cpu_s(pid: int | None) -> float:
    """User + system CPU seconds of a process so far (NaN if it is gone)."""
    if pid is None:
        return math.nan
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return math.nan
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pss_mb(pid: int) -> float:
    """A live process's proportional set size, MB (0 if it is gone)."""
    return pss_parts_mb(pid).get("Pss", 0.0)


def pss_parts_mb(pid: int) -> dict[str, float]:
    """A live process's PSS and its anonymous, file-backed and shared-memory parts, MB ({} if gone)."""
    parts = {}
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            key = line.split(":", 1)[0]
            if key in ("Pss", "Pss_Anon", "Pss_File", "Pss_Shmem"):
                parts[key] = int(line.split()[1]) / 1024
    except OSError:
        pass
    return parts


def process_tree(pid: int) -> list[int]:
    """`pid` and every live descendant (helpers a library starts count as the recorder's memory)."""
    tree, index = [pid], 0
    while index < len(tree):
        for children in Path(f"/proc/{tree[index]}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                tree += [int(child) for child in children.read_text().split()]
        index += 1
    return tree


def cpu_jiffies() -> list[int]:
    """The machine's aggregate /proc/stat cpu line."""
    return [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]


@dataclass
class Meter:
    """Machine state over one condition."""

    pids: dict[str, int | None]
    cameras: dict[str, Camera]
    started_s: float = field(default_factory=time.monotonic)
    loadavg_before: tuple[float, ...] = field(default_factory=os.getloadavg)
    jiffies: list[int] = field(default_factory=cpu_jiffies)
    cpu_s: dict[str, float] = field(default_factory=dict)
    sequences: dict[str, int] = field(default_factory=dict)
    ended_s: float = math.nan

    def __post_init__(self) -> None:
        self.cpu_s = {name: process_cpu_s(pid) for name, pid in self.pids.items()}
        self.sequences = {name: camera.latest().sequence for name, camera in self.cameras.items()}

    def _delivered(self, camera: Any, name: str) -> float:
        """Frames `camera` delivered since start; NaN if it went stale (starved of CPU) meanwhile."""
        try:
            return camera.frames()[-1].sequence - self.sequences[name]
        except CameraError:
            return math.nan

    def finish(self) -> dict[str, Any]:
        self.ended_s = time.monotonic()
        elapsed_s = self.ended_s - self.started_s
        jiffies = [b - a for a, b in zip(self.jiffies, cpu_jiffies(), strict=True)]
        total = max(1, sum(jiffies[:8]))  # user nice system idle iowait irq softirq steal
        cores = {name: (process_cpu_s(pid) - self.cpu_s[name]) / elapsed_s for name, pid in self.pids.items()}
        fps = {name: self._delivered(c, name) / elapsed_s for name, c in self.cameras.items()}
        busy = 1 - (jiffies[3] + jiffies[4]) / total
        ours = sum(v for v in cores.values() if not math.isnan(v))
        return {
            "started_s": self.started_s,
            "ended_s": self.ended_s,
            "seconds": elapsed_s,
            "loadavg_before": self.loadavg_before,
            "loadavg_after": os.getloadavg(),
            "machine_busy_pct": 100 * busy,
            # CPU used by everything else on the machine (other users, kernel workers), cores
            "other_cores": busy * (os.cpu_count() or 1) - ours,
            "steal_pct": 100 * jiffies[7] / total,
            "cpu_cores": cores,
            "camera_slots_per_s": fps,
        }
