"""The health view's findings, and its checks of the dataset's files: rows, timestamps, stats.json, videos.

    signals     every episode's state and action rows read back, as many as its length
    timestamps  frame_index 0..length-1, timestamps increasing by 1/fps, on LeRobot's frame grid
    stats       meta/stats.json: state and action min/max/mean/std, finite, matching the data
    videos      each episode's span in its MP4 files, the files present and their frame counts

The checks of the motion itself are in health_motion.py. A check examines items (episodes, or
features for stats) and counts those that passed: no error or warning (an "info" finding is a
remark, not a failure). Signals are read once (`EpisodeArrays`) and shared by the checks. Bad data
gives findings, never an exception (health.py still catches what a foreign dataset may raise).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import av
import numpy as np

from evaluation.episode_source import DatasetSource, EpisodeRecord, EpisodeSignals
from evaluation.errors import DatasetReadError
from teleop.dataset.vocabulary import ACTION_KEY, STATE_KEY

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")  # worst first

# LeRobot's default `tolerance_s`: its video decoder refuses a data timestamp farther than this from a frame.
DECODER_TOLERANCE_S = 1e-4
# A step between frames may be off 1/fps by half a frame before it counts as a dropped or doubled frame.
STEP_TOLERANCE_FRAMES = 0.5
# stats.json min/max agree with the data within this relative or absolute difference (float32 round trips).
STATS_REL_TOL, STATS_ABS_TOL = 1e-3, 1e-4


@dataclass(frozen=True)
class Finding:
    """One thing a check found, about one episode or (episode_index None) the whole dataset."""

    check: str  # the check's name, e.g. "timestamps"
    severity: Severity  # error: training or playback breaks; warning: suspicious; info: remarkable
    episode_index: int | None  # None: the dataset as a whole (a file, stats.json)
    detail: str  # one sentence naming the frame, column or file


@dataclass(frozen=True)
class CheckOutcome:
    """What one check returns."""

    checked: int  # items examined (episodes, or features for stats)
    passed: int  # of those, items with no error or warning
    findings: tuple[Finding, ...]
    notes: tuple[str, ...] = ()  # lines worth showing beside the check, e.g. each column's range


@dataclass(frozen=True)
class EpisodeArrays:
    """State and action of every episode that reads, read once for all checks."""

    signals: dict[int, EpisodeSignals] = field(default_factory=dict)  # by episode index
    unreadable: dict[int, str] = field(default_factory=dict)  # episode index -> why


def read_arrays(source: DatasetSource) -> EpisodeArrays:
    """Read every episode's signals; one that fails is recorded, not raised."""
    arrays = EpisodeArrays()
    for ep in source.episodes:
        try:
            arrays.signals[ep.index] = source.signals(ep)
        except Exception as e:  # DatasetReadError, and whatever pyarrow or numpy raise for a foreign layout
            arrays.unreadable[ep.index] = str(e) if isinstance(e, DatasetReadError) else f"{type(e).__name__}: {e}"
    return arrays


def outcome_over_episodes(checked: int, findings: list[Finding], notes: Iterable[str] = ()) -> CheckOutcome:
    """An outcome over episodes: those named by an error or warning did not pass."""
    failed = {f.episode_index for f in findings if f.severity != "info" and f.episode_index is not None}
    return CheckOutcome(checked, checked - len(failed), tuple(findings), tuple(notes))


def _rel(source: DatasetSource, path: Path) -> str:
    try:
        return str(path.relative_to(source.root))
    except ValueError:
        return str(path)


def check_signals(source: DatasetSource, arrays: EpisodeArrays) -> CheckOutcome:
    """Every episode's state and action read back."""
    findings = [Finding("signals", "error", i, f"episode {i}: {why}") for i, why in arrays.unreadable.items()]
    return outcome_over_episodes(len(source.episodes), findings)


def check_timestamps(source: DatasetSource, arrays: EpisodeArrays) -> CheckOutcome:
    """frame_index runs 0..length-1; timestamps increase by 1/fps and sit on the frame grid."""
    findings: list[Finding] = []
    for ep in source.episodes:
        try:
            frames, times_s = source.timestamps(ep)  # each data file is read once, by the dataset's reader
        except DatasetReadError as e:  # the message names the file and the next step
            findings.append(Finding("timestamps", "error", ep.index, f"episode {ep.index}: {e}"))
            continue
        if (finding := _episode_timestamps(ep, frames, times_s, videos=bool(source.cameras))) is not None:
            findings.append(finding)
    return outcome_over_episodes(len(source.episodes), findings)


def _episode_timestamps(ep: EpisodeRecord, frames: np.ndarray, times_s: np.ndarray, videos: bool) -> Finding | None:
    order = np.argsort(frames, kind="stable")
    frames, times_s = frames[order].astype(np.int64), times_s[order].astype(np.float64)
    problems: list[str] = []
    severity: Severity = "warning"
    if not np.array_equal(frames, np.arange(ep.length)):
        severity = "error"
        missing = np.setdiff1d(np.arange(ep.length), frames)
        doubled = np.unique(frames[1:][np.diff(frames) == 0])
        problems.append(
            f"{len(frames)} rows for {ep.length} frames (missing {listing(missing)}, doubled {listing(doubled)})"
        )
    if not np.all(np.isfinite(times_s)):
        return Finding("timestamps", "error", ep.index, f"episode {ep.index}: timestamps that are NaN or infinite")
    if len(times_s) >= 2:
        steps_s = np.diff(times_s)
        period_s = 1.0 / ep.fps
        off = np.abs(steps_s - period_s) > STEP_TOLERANCE_FRAMES * period_s
        if np.any(steps_s <= 0):
            severity = "error"
            problems.append(f"timestamps go back or repeat at frame {frames[int(np.argmax(steps_s <= 0)) + 1]}")
        if off.any():
            worst = int(np.argmax(np.abs(steps_s - period_s)))
            problems.append(
                f"{int(off.sum())} step{'s' if off.sum() != 1 else ''} off 1/fps by more than "
                f"{STEP_TOLERANCE_FRAMES:g} frame, the worst "
                f"{steps_s[worst] * 1e3:.1f} ms between frames {frames[worst]} and {frames[worst + 1]} "
                f"(expected {period_s * 1e3:.1f} ms)"
            )
    if videos and len(times_s) and severity != "error":  # the grid only means something with a clean index
        # lerobot-train decodes frame i at from_timestamp + timestamp[i]; the file holds it at from_timestamp + i / fps.
        off_s = np.abs(times_s - frames / ep.fps)
        if (late := off_s > DECODER_TOLERANCE_S).any():
            severity = "error"  # lerobot-train's video decoding raises FrameTimestampError for these frames
            first = int(np.argmax(late))
            problems.append(
                f"{int(late.sum())} frame{'s' if late.sum() != 1 else ''} off their video frame, the first frame "
                f"{frames[first]} at {times_s[first]:.4f} s by {off_s[first] * 1e3:.2f} ms (LeRobot's video "
                f"decoder allows {DECODER_TOLERANCE_S * 1e3:g} ms)"
            )
    if not problems:
        return None
    return Finding("timestamps", severity, ep.index, f"episode {ep.index}: " + "; ".join(problems))


def listing(values: np.ndarray, shown: int = 5) -> str:
    """A few integers for a message: "3, 7, 9 and 12 more"."""
    if not len(values):
        return "none"
    text = ", ".join(str(int(v)) for v in values[:shown])
    return text + (f" and {len(values) - shown} more" if len(values) > shown else "")


def check_stats(source: DatasetSource, arrays: EpisodeArrays) -> CheckOutcome:
    """meta/stats.json holds finite state and action statistics whose min/max match the data."""
    path = source.root / "meta" / "stats.json"
    try:
        stats = json.loads(path.read_text())
    except FileNotFoundError:
        why = "meta/stats.json is missing; lerobot-train normalises with it"
        return CheckOutcome(2, 0, (Finding("stats", "error", None, why),))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        return CheckOutcome(2, 0, (Finding("stats", "error", None, f"meta/stats.json does not parse: {e}"),))
    complete = not arrays.unreadable and len(arrays.signals) == len(source.episodes) > 0
    findings: list[Finding] = []
    passed = 0
    for key, attribute in ((STATE_KEY, "state"), (ACTION_KEY, "action")):
        # Compared only with all the data: a partial minimum would accuse a correct stats.json.
        actual = np.concatenate([getattr(s, attribute) for s in arrays.signals.values()]) if complete else None
        feature = stats.get(key) if isinstance(stats, dict) else None
        found = _feature_stats(key, feature, source.names, actual)
        passed += not found
        findings += found
    return CheckOutcome(2, passed, tuple(findings))


def _feature_stats(key: str, feature: object, names: tuple[str, ...], actual: np.ndarray | None) -> list[Finding]:
    if not isinstance(feature, dict):
        return [Finding("stats", "error", None, f"{key} has no entry in meta/stats.json")]
    values: dict[str, np.ndarray] = {}
    for stat in ("min", "max", "mean", "std"):
        try:
            values[stat] = np.asarray(feature[stat], dtype=np.float64).reshape(-1)
        except (KeyError, TypeError, ValueError):
            return [Finding("stats", "error", None, f"{key} {stat} in meta/stats.json is missing or not numbers")]
        if len(values[stat]) != len(names):
            why = f"{key} {stat} in meta/stats.json has {len(values[stat])} values for {len(names)} columns"
            return [Finding("stats", "error", None, why)]
        if not np.all(np.isfinite(values[stat])):
            bad = [names[i] for i in np.flatnonzero(~np.isfinite(values[stat]))]
            return [Finding("stats", "error", None, f"{key} {stat} in meta/stats.json is not finite for {bad}")]
    if actual is None or actual.shape[1] != len(names):
        return []  # nothing to compare with: the signals check names what did not read
    findings = []
    for stat, data in (("min", actual.min(axis=0)), ("max", actual.max(axis=0))):
        for column in np.flatnonzero(~_close(values[stat], data.astype(np.float64))):
            stated = f"{key} {stat} of {names[column]} is {values[stat][column]:.4g} in meta/stats.json"
            why = f"{stated} but {data[column]:.4g} in the data: training normalises with the stated one"
            findings.append(Finding("stats", "warning", None, why))
    return findings


def _close(stated: np.ndarray, actual: np.ndarray) -> np.ndarray:
    return np.abs(stated - actual) <= np.maximum(STATS_ABS_TOL, STATS_REL_TOL * np.abs(actual))


def check_videos(source: DatasetSource, arrays: EpisodeArrays) -> CheckOutcome:
    """Each video segment spans its episode's length; every file is present, non-empty, with enough frames."""
    findings: list[Finding] = []
    by_file: dict[Path, list[EpisodeRecord]] = {}
    failed: set[int] = set()
    for ep in source.episodes:
        for segment in ep.videos:
            by_file.setdefault(segment.path, []).append(ep)
            frames = (segment.to_timestamp_s - segment.from_timestamp_s) * ep.fps
            if abs(frames - ep.length) > 1.0:  # the span is [from, to): length / fps seconds
                span = f"{segment.from_timestamp_s:.3f}–{segment.to_timestamp_s:.3f} s"
                why = f"episode {ep.index}: its {segment.view} span {span} holds {frames:.1f} frames, not {ep.length}"
                findings.append(Finding("videos", "error", ep.index, why))
                failed.add(ep.index)
    for path, episodes in sorted(by_file.items()):
        if (problem := _file_problem(path, sum(ep.length for ep in episodes))) is not None:
            severity, text = problem
            indices = sorted({ep.index for ep in episodes})
            only = indices[0] if len(indices) == 1 else None  # a shared file is the dataset's, not one episode's
            detail = f"{_rel(source, path)} {text} (episodes {listing(np.array(indices))})"
            findings.append(Finding("videos", severity, only, detail))
            failed |= set(indices) if severity != "info" else set()
    for path in source.missing_videos:  # declared, absent when the dataset was opened: left out of the segments
        why = f"{_rel(source, path)} is missing (meta/info.json declares its camera; lerobot-train needs it)"
        findings.append(Finding("videos", "error", None, why))
    return CheckOutcome(len(source.episodes), len(source.episodes) - len(failed), tuple(findings))


def _file_problem(path: Path, expected_frames: int) -> tuple[Severity, str] | None:
    if not path.is_file():
        return "error", "is missing"
    if path.stat().st_size == 0:
        return "error", "is empty (0 bytes)"
    try:
        with av.open(str(path)) as container:
            frames = container.streams.video[0].frames  # from the container's index: no decoding
    except (av.FFmpegError, OSError, ValueError, IndexError) as e:
        return "error", f"cannot be opened as a video: {e}"
    if frames and frames < expected_frames:  # 0: the container does not say how many
        return "error", f"holds {frames} frames, its episodes need {expected_frames}"
    if frames > expected_frames:  # harmless: frames no episode points at (left by an edit, say)
        return "info", f"holds {frames} frames, {frames - expected_frames} more than its episodes use"
    return None
