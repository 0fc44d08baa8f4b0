"""Curation from the review page: marks kept beside the dataset, previews and writes run by so101-edit.

    <parent>/<dataset>.curation.json    the page's draft: episodes to drop, spans to keep, the output folder

The page never writes a dataset itself: it runs `so101-edit` with the options its marks stand for
(`edit_args`), so a script that runs the printed command gets the same dataset, and evaluation/
stays a reader of datasets (it imports no writer). Each mark is bound to the fingerprint of the
episode it was made on: after a re-recording or an outside edit, a mark on an episode that changed
is left out and named, never applied to whatever episode now holds that index.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

DRAFT_SUFFIX = ".curation.json"
PREVIEW_TIMEOUT_S = 300.0  # a dry run reads every card and, for trims proposed from the motion, every state


def draft_path(dataset_root: Path) -> Path:
    """The draft beside a dataset: `<parent>/<dataset folder>.curation.json` (as the store is)."""
    return dataset_root.parent / f"{dataset_root.name}{DRAFT_SUFFIX}"


@dataclass
class Draft:
    """What the page's marks ask of the next curated dataset."""

    drop: dict[int, str] = field(default_factory=dict)  # episode -> fingerprint when marked
    trims: dict[int, tuple[int, int, str]] = field(default_factory=dict)  # episode -> (start, stop, fingerprint)
    output_root: str = ""  # the new dataset's folder, as last typed

    @property
    def empty(self) -> bool:
        """Whether nothing is marked."""
        return not self.drop and not self.trims


def load_draft(path: Path, fingerprints: Mapping[int, str]) -> tuple[Draft, list[str]]:
    """The draft at `path` (empty if none), keeping only marks on episodes as they are now, and what was left out."""
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        return Draft(), []
    except (OSError, ValueError) as e:
        return Draft(), [f"the curation draft {path} cannot be read ({e}); its marks are not used"]
    draft, stale = Draft(output_root=str(raw.get("output_root", ""))), []
    for key, fingerprint in dict(raw.get("drop", {})).items():
        index = int(key)
        if fingerprints.get(index) == fingerprint:
            draft.drop[index] = fingerprint
        else:
            stale.append(f"drop episode {index}")
    for key, (start, stop, fingerprint) in dict(raw.get("trims", {})).items():
        index = int(key)
        if fingerprints.get(index) == fingerprint:
            draft.trims[index] = (int(start), int(stop), fingerprint)
        else:
            stale.append(f"trim episode {index} to {start}:{stop}")
    if stale:
        stale = [f"marks made on episodes that have changed since are left out: {'; '.join(stale)}"]
    return draft, stale


def save_draft(path: Path, draft: Draft) -> None:
    """Write the draft atomically (a crash leaves the old one or the new one)."""
    record = {
        "drop": {str(i): f for i, f in sorted(draft.drop.items())},
        "trims": {str(i): list(t) for i, t in sorted(draft.trims.items())},
        "output_root": draft.output_root,
    }
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(record, indent=1))
    os.replace(partial, path)


def edit_args(dataset_root: Path, draft: Draft, output_root: Path, *, dry_run: bool) -> list[str]:
    """so101-edit's options for the draft (what the page runs, and shows for a script)."""
    args = [f"--dataset.root={dataset_root}"]
    if draft.drop:
        args.append("--drop=" + ",".join(str(i) for i in sorted(draft.drop)))
    if draft.trims:
        args.append("--trim=" + ",".join(f"{i}:{a}:{b}" for i, (a, b, _) in sorted(draft.trims.items())))
    args.append(f"--new_dataset.root={output_root}")
    if dry_run:
        args.append("--dry_run=true")
    return args


def command_line(args: list[str]) -> str:
    """The command a person would type for `args`."""
    return shlex.join(["so101-edit", *args])


def _executable() -> list[str]:
    script = Path(sys.executable).with_name("so101-edit")
    return [str(script)] if script.exists() else [sys.executable, "-m", "teleop.commands.edit"]


def preview(args: list[str]) -> tuple[int, str]:
    """Run so101-edit's dry run: (exit status, what it printed)."""
    done = subprocess.run([*_executable(), *args], capture_output=True, text=True, timeout=PREVIEW_TIMEOUT_S)
    return done.returncode, (done.stdout + done.stderr).strip()


@dataclass
class EditJob:
    """One so101-edit run the page started."""

    number: int
    args: list[str]
    lines: list[str] = field(default_factory=list)
    returncode: int | None = None

    @property
    def running(self) -> bool:
        """Whether it has not ended yet."""
        return self.returncode is None


class EditJobs:
    """so101-edit runs started from the page, one at a time, their output kept for the page to show."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[int, EditJob] = {}

    def start(self, args: list[str]) -> EditJob:
        """Start a run, or return the one still running (one writer at a time)."""
        with self._lock:
            running = [j for j in self._jobs.values() if j.running]
            if running:
                return running[0]
            job = EditJob(len(self._jobs) + 1, args)
            self._jobs[job.number] = job
        threading.Thread(target=self._run, args=(job,), name=f"so101-edit-{job.number}", daemon=True).start()
        return job

    def get(self, number: int) -> EditJob | None:
        """The run with that number, if the page started it."""
        with self._lock:
            return self._jobs.get(number)

    @staticmethod
    def _run(job: EditJob) -> None:
        env = {**os.environ, "COLUMNS": "100", "TERM": "dumb"}  # plain lines, no live progress redraws
        with subprocess.Popen(
            [*_executable(), *job.args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        ) as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                if line.strip():
                    job.lines.append(line.rstrip())
            job.returncode = proc.wait()
