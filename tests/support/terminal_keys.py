"""Typing keys into a command on a pseudo-terminal, and reading its live status line.

with ForegroundJob("so101-deploy", *args, terminal=True) as job:
    wait_recording(job, "1/2", at_least_s=1.0)     # the status line says episode 1/2 REC for 1 s
    press(job, "c")                                # as a person types it
    assert "you have the arms" in plain(job.text)
"""

import os
import re

from tests.support.commands import ForegroundJob

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def plain(text: str) -> str:
    """Terminal output without colour codes, its wrapped lines joined."""
    return " ".join(_ANSI.sub("", text).split())


def press(job: ForegroundJob, key: str) -> None:
    """Type `key` on the job's terminal."""
    os.write(job._master, key.encode())  # the helper keeps its terminal's master side


def wait_recording(job: ForegroundJob, episode: str, at_least_s: float = 0.5) -> None:
    """Until the status line shows `episode` ("2/3") recording for `at_least_s`: mid-episode."""
    pattern = re.compile(rf"episode {re.escape(episode)} REC\s+(\d+\.\d)/")

    def recording() -> bool:
        return any(float(s) >= at_least_s for s in pattern.findall(plain(job.text)))

    job.wait_until(recording, 180, f"episode {episode} recording for {at_least_s} s")
