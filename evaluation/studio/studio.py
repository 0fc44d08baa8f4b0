"""The studio's state: its jobs, who controls them, and the watch that stops the rig when nobody does.

The watch runs beside the web server: when a job holds the rig and no page has held control for the
lease's `lapse_s` (the controller's tab closed, its browser crashed, its network dropped, or control
was handed back and nobody took it), the job gets SIGINT, the command's own Ctrl-C: the recording
discards the episode in progress and keeps every saved one, a save in progress completes, the
followers exit per `rig.safety.on_exit`. What happened is kept as an event the pages show.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass

from evaluation.studio.actions import ActionInputError, Place, command_for
from evaluation.studio.command_line import CommandLine
from evaluation.studio.control import ControlLease
from evaluation.studio.jobs import Job, JobBoard

log = logging.getLogger(__name__)
WATCH_PERIOD_S = 0.2


@dataclass(frozen=True)
class Event:
    """Something the studio did on its own, for every page to see."""

    at_s: float  # seconds since the studio started
    text: str


class Studio:
    """Jobs, the control lease and the watch; `close()` stops every job safely."""

    def __init__(self, place: Place, lease: ControlLease, board: JobBoard | None = None) -> None:
        self.place = place
        self.lease = lease
        self.board = board or JobBoard()
        self.events: deque[Event] = deque(maxlen=50)
        self._unattended_since_s: float | None = None
        self._stopped: set[int] = set()  # jobs the watch has interrupted: one Ctrl-C each, never a second
        self._stop = threading.Event()
        self._watch = threading.Thread(target=self._run_watch, name="studio-watch", daemon=True)

    def start(self) -> None:
        """Start the watch."""
        self._watch.start()

    def run(self, action: str, fields: dict[str, str]) -> Job:
        """Start an action's command (the caller has checked that its page holds control).

        Raises:
            ActionInputError: a field is missing or not allowed.
            JobRefusedError: another job holds the rig.
        """
        line, lane = command_for(action, fields, self.place)
        if action == "judge" and fields.get("scorer") == "llm":
            self._require_estimate(line)
        job = self.board.start(line, lane)
        self.say(f"job {job.number}: {line.shown}")
        return job

    def _require_estimate(self, line: CommandLine) -> None:
        """An LLM judge run costs money: its dry run's estimate must have been seen first, in this studio.

        Raises:
            ActionInputError: no dry run of this dataset has finished here yet.
        """
        dataset = next(a for a in line.argv if a.startswith("--dataset.root="))
        for job in self.board.all():
            if "--dry_run=true" in job.line.argv and dataset in job.line.argv and job.exit_code == 0:
                return
        raise ActionInputError(
            "the LLM judge's cost is estimated first: press Estimate the cost (so101-judge --dry_run=true), read"
            " the estimate, then Score"
        )

    def say(self, text: str) -> None:
        """Keep an event for the pages (and the studio's log)."""
        log.info("%s", text)
        self.events.append(Event(round(time.monotonic() - self.board.since_s, 3), text))

    def watch_once(self) -> None:
        """One look: stop the rig's job safely once it has gone unattended for the lease's lapse_s."""
        gone = self.lease.lapse()
        if gone is not None:
            self.say("the controlling page stopped answering: control is free")
        job = self.board.rig_job()
        if job is None or self.lease.held or job.number in self._stopped:
            self._unattended_since_s = None
            return
        now = time.monotonic()
        if self._unattended_since_s is None:
            self._unattended_since_s = now
        if now - self._unattended_since_s >= self.lease.lapse_s:
            self.say(
                f"job {job.number} ({job.line.argv[0]}) had no controlling page for {self.lease.lapse_s:g} s:"
                " stopped as Ctrl-C stops it"
            )
            job.interrupt()
            self._stopped.add(job.number)
            self._unattended_since_s = None

    def _run_watch(self) -> None:
        while not self._stop.wait(WATCH_PERIOD_S):
            try:
                self.watch_once()
            except Exception:  # the watch must outlive any one look
                log.exception("the studio's watch failed once")

    def close(self, timeout_s: float = 60.0) -> None:
        """Stop the watch, then every job the way Ctrl-C stops it (SIGKILL after `timeout_s`)."""
        self._stop.set()
        if self._watch.is_alive():
            self._watch.join(2)
        for job, code in self.board.stop_all(timeout_s):
            how = f"exit {code}" if code is not None else f"killed: it did not stop within {timeout_s:g} s"
            self.say(f"job {job.number} ({job.line.argv[0]}) stopped by Ctrl-C: {how}")
