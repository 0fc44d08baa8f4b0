"""Waiting on things and finding a command's leftover processes (after a kill -9, say)."""

import os
import signal
import subprocess
import time
from pathlib import Path


def wait_for(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line contains `text`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def describe(pids: list[int]) -> list[str]:
    """Each process's state, what it waits in, and its command line (for a failure message)."""
    out = []
    for pid in pids:
        try:
            proc = Path(f"/proc/{pid}")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            wchan = (proc / "wchan").read_text()
            threads = len(list((proc / "task").iterdir()))
            command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:160]
            out.append(f"pid {pid} state {state} wchan {wchan} threads {threads}: {command}")
        except OSError:
            continue
    return out


def kill_9(process: subprocess.Popen, folder: Path) -> None:
    """SIGKILL `process`, then wait until every process mentioning `folder` (its children) is gone.

    The writer first lets its encoders drain and discards the episode: seconds on a loaded 2-core
    machine, where a 20 s limit was once missed inside the full suite; 60 s are allowed.
    """
    try:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
    try:
        wait_for(lambda: not processes_mentioning(str(folder)), 60, "the command's child processes to exit")
    except AssertionError:
        raise AssertionError(
            f"still running 60 s after the kill: {describe(processes_mentioning(str(folder)))}"
        ) from None
