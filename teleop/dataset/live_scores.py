"""Scores the operator typed at the end of a rollout episode (so101-deploy), one JSON file per episode.

    meta/so101/live_scores/episode-000003.json
        {"schema": 1, "episode_index": 3, "operator": "ana", "scored_at": "2026-01-05T14:02:11.250+00:00",
         "skipped": false, "scores": {"R1": 1.0, "R2": 0.5, "R3": 0.0}}

`skipped` is true (and `scores` empty) when the operator pressed skip; an optional `"frames": 412` is
the episode's length when it was scored, so a reader can refuse a file that no longer describes the
episode at its index. so101-judge, so101-review and so101-report import these files as human labels
(evaluation/live_labels.py), bound to the episode as it is then.

Why not under meta/so101/episodes/episode-000003/ beside the quality card: that folder is one of the
journal's EPISODE_DIRS, whose files are listed when an episode is committed, and a repair of a later
interrupted save deletes every file there the journal does not list. A score is written after its
episode was saved, so it lives in its own folder, named per episode the same way. A rewrite is atomic
(temp file, fsync, rename, fsync the folder), so a crash leaves the old file or the new one, plus at
worst a `*.so101-tmp` temp file that the recorder's repair sweeps (journal.TEMP_SUFFIX).

A leaf of the dataset layout (tests/support/layering.py, DATASET_LAYOUT): it imports nothing of the
product but `sidecar`, so the evaluation layer may read it.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType

from teleop.dataset.sidecar import SO101_DIR

logger = logging.getLogger(__name__)

LIVE_SCORES_DIR = f"{SO101_DIR}/live_scores"
SCHEMA = 1
TEMP_SUFFIX = ".so101-tmp"  # journal.TEMP_SUFFIX (a test checks they agree): repair removes leftovers
_KEYS = frozenset({"schema", "episode_index", "operator", "scored_at", "skipped", "scores", "frames"})
_OPTIONAL = frozenset({"frames"})


class LiveScoreError(ValueError):
    """A live score is invalid, or a file is not one `write_live_score` wrote (names the file)."""


def now_utc() -> str:
    """The current time as a live score records it: UTC ISO 8601, milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class LiveScore:
    """The operator's verdict on one rollout episode, given live when it ended.

    Raises:
        LiveScoreError: on construction, a value that is not allowed (the message names the field).
    """

    episode_index: int  # episode in the dataset, as saved
    operator: str  # who scored, recorded as the reviewer of the labels
    scores: Mapping[str, float] = field(default_factory=dict, hash=False)  # criterion id -> 0..1; {} when skipped
    skipped: bool = False  # the operator chose not to score this episode
    scored_at: str = field(default_factory=now_utc)  # when, UTC ISO 8601 (e.g. "2026-01-05T14:02:11.250+00:00")
    frames: int | None = None  # the episode's length when scored; None: not known (not checked on import)

    def __post_init__(self) -> None:
        """Validate, and freeze `scores` (a read-only copy, values as float)."""
        if isinstance(self.episode_index, bool) or not isinstance(self.episode_index, int) or self.episode_index < 0:
            raise LiveScoreError(f"episode_index={self.episode_index!r}; allowed: an integer >= 0")
        if not isinstance(self.operator, str) or not self.operator.strip():
            raise LiveScoreError(f"operator={self.operator!r}; allowed: the operator's name, not empty")
        if not isinstance(self.skipped, bool):
            raise LiveScoreError(f"skipped={self.skipped!r}; allowed: true or false")
        _check_time(self.scored_at)
        if self.frames is not None and (
            isinstance(self.frames, bool) or not isinstance(self.frames, int) or self.frames < 1
        ):
            raise LiveScoreError(f"frames={self.frames!r}; allowed: the episode's length (an integer >= 1) or None")
        if not isinstance(self.scores, Mapping):
            raise LiveScoreError(f"scores={self.scores!r}; allowed: a mapping of criterion id to score")
        scores = {}
        for criterion, score in self.scores.items():
            if not isinstance(criterion, str) or not criterion.strip():
                raise LiveScoreError(f"criterion {criterion!r}; allowed: a criterion id such as 'R1'")
            if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
                raise LiveScoreError(f"score of {criterion}: {score!r}; allowed: a finite number in 0..1")
            if not 0.0 <= score <= 1.0:
                raise LiveScoreError(f"score of {criterion}: {score!r}; allowed: a number in 0..1")
            scores[criterion] = float(score)
        if self.skipped and scores:
            raise LiveScoreError(f"episode {self.episode_index} is skipped but has scores {scores}; a skip has none")
        if not self.skipped and not scores:
            raise LiveScoreError(f"episode {self.episode_index} has no scores; pass skipped=True for a skip")
        object.__setattr__(self, "scores", MappingProxyType(scores))
        object.__setattr__(self, "operator", self.operator.strip())

    def to_json(self) -> str:
        """The file's text: the keys above in a fixed order, one per line."""
        doc: dict[str, object] = {
            "schema": SCHEMA,
            "episode_index": self.episode_index,
            "operator": self.operator,
            "scored_at": self.scored_at,
            "skipped": self.skipped,
            "scores": dict(self.scores),
        }
        if self.frames is not None:
            doc["frames"] = self.frames
        return json.dumps(doc, indent=1) + "\n"


def live_score_path(root: Path, index: int) -> Path:
    """Where the live score of episode `index` of the dataset at `root` is kept."""
    return Path(root) / LIVE_SCORES_DIR / _file_name(index)


def live_score_paths(root: Path) -> list[Path]:
    """Every live score file of a dataset, by episode index (temp files and other names left out)."""
    folder = Path(root) / LIVE_SCORES_DIR
    if not folder.is_dir():
        return []
    found = []
    for path in folder.glob("episode-*.json"):
        number = path.stem.removeprefix("episode-")
        if path.is_file() and number.isdigit():
            found.append((int(number), path))
    return [path for _, path in sorted(found)]


def write_live_score(root: Path, score: LiveScore) -> Path:
    """Write (or replace) an episode's live score atomically; returns the file.

    Call it after the episode was saved (a score of an episode that was then re-recorded or lost would
    otherwise be kept for whatever is saved at that index next), and for a skip too, so the file
    always describes the latest attempt at that index.

    Raises:
        OSError: the file cannot be written (the previous one, if any, is left as it was).
    """
    path = live_score_path(root, score.episode_index)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(path.name + TEMP_SUFFIX)
    with open(temp, "w", encoding="utf-8") as f:
        f.write(score.to_json())
        f.flush()
        os.fsync(f.fileno())
    os.replace(temp, path)
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
    return path


def read_live_score(path: Path) -> LiveScore:
    """One live score file.

    Raises:
        LiveScoreError: it cannot be read, or is not a live score this version reads (names the file).
    """
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(doc, dict):
            raise LiveScoreError("not a JSON object")
        if doc.get("schema") != SCHEMA:
            raise LiveScoreError(f"schema {doc.get('schema')!r}; this version reads {SCHEMA}: upgrade the reader")
        missing = sorted(_KEYS - _OPTIONAL - doc.keys())
        unknown = sorted(doc.keys() - _KEYS)
        if missing or unknown:
            raise LiveScoreError(f"missing keys {missing}, unknown keys {unknown}")
        score = LiveScore(
            episode_index=doc["episode_index"],
            operator=doc["operator"],
            scores=doc["scores"],
            skipped=doc["skipped"],
            scored_at=doc["scored_at"],
            frames=doc.get("frames"),
        )
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, LiveScoreError) as e:
        raise LiveScoreError(
            f"{path} is not a live score so101-deploy wrote ({e}); fix it, or move it aside so it is not read: "
            f"{shlex.join(['mv', str(path), str(path) + '.bad'])}"
        ) from e
    expected = _file_name(score.episode_index)
    if path.name != expected:
        raise LiveScoreError(
            f"{path} holds the score of episode {score.episode_index}, which belongs in {expected}; "
            f"move it aside so it is not read: {shlex.join(['mv', str(path), str(path) + '.bad'])}"
        )
    return score


def read_live_scores(root: Path) -> list[LiveScore]:
    """Every readable live score of a dataset, by episode index.

    A file that does not read is skipped with a warning naming it and saying what to do, instead of
    raising: one torn or hand-edited file must not hide the other episodes' scores, nor stop a command
    that only wants them (evaluation/live_labels.py reads file by file and reports each problem).
    """
    out = []
    for path in live_score_paths(root):
        try:
            out.append(read_live_score(path))
        except LiveScoreError as e:
            logger.warning("%s", e)
    return out


def _file_name(index: int) -> str:
    return f"episode-{index:06d}.json"  # as sidecar.episode_dir names an episode's folder


def _check_time(value: object) -> None:
    if not isinstance(value, str):
        raise LiveScoreError(f"scored_at={value!r}; allowed: an ISO 8601 UTC time such as {now_utc()!r}")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as e:
        raise LiveScoreError(f"scored_at={value!r} is not ISO 8601; allowed: e.g. {now_utc()!r}") from e
    offset = parsed.utcoffset()
    if offset is None or offset.total_seconds() != 0:
        raise LiveScoreError(f"scored_at={value!r} is not UTC; allowed: e.g. {now_utc()!r}")
