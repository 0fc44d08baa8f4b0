"""What the recording itself says about an episode, judged or not: its quality card and its timeline.

    dataset episode  --signals-->        joint traces, idle spans (from the recorded states)
    meta/so101/ sidecar  --check-->      quality card and per-frame marks, only when the sidecar
                                         still belongs to the episode (teleop/dataset/sidecar.py)

A dataset recorded by another tool has no sidecar: its traces and idle spans still come from the
data, and the page says that no card was kept. A sidecar that an edit left describing another
episode (LeRobot's lerobot-edit-dataset renumbers episodes; meta/so101/ copied back along with them)
is named stale and never shown as another episode's facts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluation.episode_source import DatasetSource, EpisodeRecord, EpisodeSignals
from teleop.dataset.sidecar import SidecarCheck, check_sidecar, idle_frames, read_quality, read_timing

MIN_IDLE_SPAN_S = 0.5  # shorter pauses are part of the motion, not idle time worth marking, s


@dataclass(frozen=True)
class QualitySummary:
    """The quality card's headline numbers, as the episodes list shows them."""

    achieved_fps: float  # control-loop rate over the episode, Hz
    skew_p99_ms: float | None  # camera capture spread per tick, p99, ms
    dropped_frames: int  # camera frames lost, all cameras
    idle_fraction: float  # share of frames with no body joint moving
    limit_hits: int  # joint-limit clamps by the safety layer
    verdict: str  # "keep", "keep (marked)" or "rerecord"
    failed_gates: tuple[str, ...]  # why it was marked

    @classmethod
    def from_card(cls, card: dict[str, Any]) -> QualitySummary:
        """From a saved card (quality.json); missing numbers read as none lost, nothing hit."""
        skew = card.get("skew_p99_ms")
        return cls(
            achieved_fps=float(card.get("achieved_fps", 0.0)),
            skew_p99_ms=None if skew is None else float(skew),
            dropped_frames=int(sum((card.get("dropped_frames") or {}).values())),
            idle_fraction=float(card.get("idle_fraction", 0.0)),
            limit_hits=int(card.get("limit_hits", 0)),
            verdict=str(card.get("verdict", "")),
            failed_gates=tuple(str(g) for g in card.get("failed_gates", ())),
        )


@dataclass(frozen=True)
class EpisodeFacts:
    """One episode's own facts: its length, its sidecar's verdict and, when that holds, its card."""

    index: int  # episode index
    duration_s: float  # first to last frame, s
    task: str  # task text
    sidecar: SidecarCheck  # whether the quality card and timing facts belong to this episode
    quality: QualitySummary | None  # None: no sidecar, or a stale one

    @property
    def idle_percent(self) -> float | None:
        """Idle share in percent: from the card (same rule as the timeline's idle spans)."""
        return None if self.quality is None else 100.0 * self.quality.idle_fraction


def episode_facts(source: DatasetSource, episode: EpisodeRecord) -> EpisodeFacts:
    """Read one episode's sidecar, checked against its recorded states (reads its data file, cached)."""
    signals = source.signals(episode)
    check = check_sidecar(source.root, episode.index, signals.names, signals.state)
    quality = QualitySummary.from_card(read_quality(source.root, episode.index)) if check.usable else None
    return EpisodeFacts(episode.index, episode.duration_s, episode.task, check, quality)


def idle_spans(signals: EpisodeSignals, min_span_s: float = MIN_IDLE_SPAN_S) -> list[tuple[int, int]]:
    """[first, last] frames of each run of idle frames at least `min_span_s` long.

    Idle frames by the rule of the quality card's idle share (sidecar.idle_frames).
    """
    idle = idle_frames(signals.state, signals.names, signals.fps)  # all False without two frames and a body joint
    spans, start = [], None
    for frame, still in enumerate([*idle.tolist(), False]):
        if still and start is None:
            start = frame
        elif not still and start is not None:
            if (frame - start) / signals.fps >= min_span_s:
                spans.append((start, frame - 1))
            start = None
    return spans


def timeline(source: DatasetSource, episode: EpisodeRecord) -> dict[str, Any]:
    """The episode page's traces and marks, as JSON.

    Joint states and actions per column, idle spans and, when the sidecar belongs to the episode,
    the frames where the safety layer changed a goal (a gripper's squeeze relief aside) and the frames
    after a camera lost some (sequence gaps).
    """
    signals = source.signals(episode)
    check = check_sidecar(source.root, episode.index, signals.names, signals.state)
    marks: dict[str, Any] = {"idle": idle_spans(signals), "safety": [], "dropped": []}
    if check.usable:
        marks.update(_sidecar_marks(read_timing(source.root, episode.index)))
    return {
        "fps": signals.fps,
        "names": list(signals.names),
        "state": _columns(signals.state),
        "action": _columns(signals.action),
        "marks": marks,
        "sidecar": {"status": check.status, "reason": check.reason},
    }


def _sidecar_marks(timing: dict[str, np.ndarray]) -> dict[str, list[int]]:
    safety = timing.get("safety.changed_mask")
    relief = timing.get("safety.relief_mask")
    changed: list[int] = []
    if safety is not None:
        masks = np.nan_to_num(safety).astype(np.int64)
        if relief is not None:  # a gripper eased off a squeeze is routine, not worth a mark
            masks &= ~np.nan_to_num(relief).astype(np.int64)
        changed = np.flatnonzero(masks != 0).tolist()
    dropped: set[int] = set()
    for key, sequence in timing.items():
        if key.endswith(".sequence") and len(sequence) > 1:
            gaps = np.diff(np.nan_to_num(sequence)) > 1  # a camera skipped frames before this one
            dropped.update((np.flatnonzero(gaps) + 1).tolist())
    return {"safety": changed, "dropped": sorted(dropped)}


def _columns(matrix: np.ndarray) -> list[list[float]]:
    """Column-major and rounded to 0.01 (a degree's hundredth: finer than any servo step)."""
    return np.round(np.asarray(matrix, dtype=np.float64).T, 2).tolist()
