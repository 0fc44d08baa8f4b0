"""Episode quality: a card after every episode, and gates that send a bad one back for re-recording.

An episode recorded while the loop ran slow or the cameras fell out of step trains a policy on
data that never happened at the stated rate; ALOHA rejected such episodes, LeRobot keeps them
silently. The card says what happened; the gates decide whether the episode is kept.
"""

from dataclasses import asdict, dataclass, field
from enum import StrEnum

import numpy as np

from robot.config_checks import reject_non_finite
from robot.errors import ConfigError


class GateAction(StrEnum):
    """What happens to an episode that fails a gate."""

    RERECORD = "rerecord"  # discard it and record the same episode again
    KEEP = "keep"  # keep it, marked on its card


@dataclass(frozen=True)
class QualityGates:
    """Limits an episode must meet to be kept without a mark."""

    min_fps: float = 29.0  # achieved control-loop rate over the episode, Hz
    max_period_error_p99_ms: float = 10.0  # p99 of |period - 1/fps|, ms
    max_skew_p99_ms: float = 40.0  # p99 spread of the cameras' capture times per tick, ms
    max_dropped_frames: int = 0  # camera frames lost (sequence gaps), per camera
    max_writer_dropped: int = 0  # frames the dataset writer could not take (it fell behind)
    on_fail: GateAction = GateAction.RERECORD  # rerecord, or keep with a mark

    def __post_init__(self) -> None:
        reject_non_finite(self, "gates")
        if self.min_fps <= 0:
            raise ConfigError(f"gates.min_fps={self.min_fps}: must be > 0")
        for name in ("max_period_error_p99_ms", "max_skew_p99_ms"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"gates.{name}={getattr(self, name)}: must be > 0")


@dataclass
class EpisodeLog:
    """What the recorder saw, tick by tick, during one episode."""

    starts_s: list[float] = field(default_factory=list)
    skews_s: list[float] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)  # frames each camera never delivered
    duplicated: dict[str, int] = field(default_factory=dict)  # ticks that had to reuse a camera's frame
    moving: list[bool] = field(default_factory=list)
    limit_hits: int = 0
    writer_dropped: int = 0
    peak_temperature_c: float = 0.0

    def add_frames(self, skew_s: float, duplicated: frozenset[str]) -> None:
        """Camera facts of one tick."""
        self.skews_s.append(skew_s)
        for camera in duplicated:
            self.duplicated[camera] = self.duplicated.get(camera, 0) + 1

    def add_lost(self, camera: str, count: int) -> None:
        """Frames a camera skipped (gaps in its sequence numbers)."""
        self.dropped[camera] = self.dropped.get(camera, 0) + count


@dataclass(frozen=True)
class QualityCard:
    """How an episode went; stored beside the dataset and printed after the episode."""

    episode: int
    frames: int
    duration_s: float
    achieved_fps: float
    period_error_p99_ms: float
    skew_p99_ms: float | None
    dropped_frames: dict[str, int]
    duplicated_frames: dict[str, int]
    writer_dropped: int
    idle_fraction: float
    limit_hits: int
    peak_temperature_c: float
    failed_gates: tuple[str, ...]
    verdict: str  # "keep", "keep (marked)" or "rerecord"

    def as_dict(self) -> dict:
        """JSON-friendly form."""
        return asdict(self)


def quality_card(episode: int, log: EpisodeLog, fps: float, gates: QualityGates) -> QualityCard:
    """Judge one episode's log against the gates."""
    starts = np.asarray(log.starts_s)
    frames = len(starts)
    duration = float(starts[-1] - starts[0]) if frames > 1 else 0.0
    achieved = (frames - 1) / duration if duration > 0 else 0.0
    errors_ms = np.abs(np.diff(starts) - 1.0 / fps) * 1000 if frames > 1 else np.zeros(1)
    period_p99 = float(np.percentile(errors_ms, 99))
    skew_p99 = float(np.percentile(np.asarray(log.skews_s) * 1000, 99)) if log.skews_s else None
    idle = 1.0 - (sum(log.moving) / len(log.moving)) if log.moving else 1.0
    failed = []
    if achieved < gates.min_fps:
        failed.append(f"loop rate {achieved:.2f} Hz < {gates.min_fps:g}")
    if period_p99 > gates.max_period_error_p99_ms:
        failed.append(f"period error p99 {period_p99:.1f} ms > {gates.max_period_error_p99_ms:g}")
    if skew_p99 is not None and skew_p99 > gates.max_skew_p99_ms:
        failed.append(f"camera skew p99 {skew_p99:.1f} ms > {gates.max_skew_p99_ms:g}")
    for camera, count in sorted(log.dropped.items()):
        if count > gates.max_dropped_frames:
            failed.append(f"{camera} lost {count} frame(s)")
    if log.writer_dropped > gates.max_writer_dropped:
        failed.append(f"the writer fell behind and lost {log.writer_dropped} frame(s)")
    verdict = "keep" if not failed else "rerecord" if gates.on_fail is GateAction.RERECORD else "keep (marked)"
    return QualityCard(
        episode=episode,
        frames=frames,
        duration_s=round(duration, 3),
        achieved_fps=round(achieved, 3),
        period_error_p99_ms=round(period_p99, 3),
        skew_p99_ms=None if skew_p99 is None else round(skew_p99, 3),
        dropped_frames=dict(log.dropped),
        duplicated_frames=dict(log.duplicated),
        writer_dropped=log.writer_dropped,
        idle_fraction=round(idle, 3),
        limit_hits=log.limit_hits,
        peak_temperature_c=log.peak_temperature_c,
        failed_gates=tuple(failed),
        verdict=verdict,
    )
