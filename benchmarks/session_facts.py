"""What the session benchmark reads of a recorder while it records: memory, files, threads, disk.

facts = tree_facts(pid)          # summed over the recorder's processes, the emulator's left out
facts.pss_mb, facts.open_files, facts.threads
disk_mb(root)                    # what the dataset folder holds so far
"""

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from benchmarks.proc_stats import process_tree, pss_mb

FPS = 30
TASK = "Fold the cloth"
# A user's three cameras at 480x640 (name, height, width), as hardware_configs/virtual.yaml has them.
CAMERAS = (("left_wrist", 480, 640), ("right_wrist", 480, 640), ("overhead", 480, 640))
OURS_REPO, LEROBOT_REPO = "bench/session_ours", "bench/session_lerobot"
EMULATOR = "robot.virtual.server"  # the virtual rig's processes are the arms', not the recorder's


@dataclass(frozen=True)
class TreeFacts:
    """One sample of a recorder's processes."""

    pss_mb: float  # proportional set size, summed (shared pages split between the processes)
    open_files: int  # file descriptors open
    threads: int
    processes: int


def _cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
    return ""


def recorder_pids(root_pid: int) -> list[int]:
    """`root_pid` and its descendants, without the virtual rig's emulator processes and theirs."""
    left_out = {pid for top in process_tree(root_pid) if EMULATOR in _cmdline(top) for pid in process_tree(top)}
    return [pid for pid in process_tree(root_pid) if pid not in left_out]


def _threads(pid: int) -> int:
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return 0


def _open_files(pid: int) -> int:
    with contextlib.suppress(OSError):
        return len(os.listdir(f"/proc/{pid}/fd"))
    return 0


def tree_facts(root_pid: int) -> TreeFacts:
    """The recorder's memory, open files and threads now."""
    pids = recorder_pids(root_pid)
    return TreeFacts(
        pss_mb=round(sum(pss_mb(pid) for pid in pids), 1),
        open_files=sum(_open_files(pid) for pid in pids),
        threads=sum(_threads(pid) for pid in pids),
        processes=len(pids),
    )


def disk_mb(root: Path) -> float:
    """Bytes under `root`, MB (files only)."""
    total = 0
    for path in Path(root).rglob("*"):
        with contextlib.suppress(OSError):
            if path.is_file():
                total += path.stat().st_size
    return round(total / 1e6, 1)
