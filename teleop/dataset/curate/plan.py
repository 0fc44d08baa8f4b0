"""What a curated dataset holds: which source episodes, in which order, and which frames of each.

A curation never edits its source: it names the episodes to keep (in source order) and, for some,
the span of frames to keep (a trimmed idle head or tail). `so101-edit` and the review page both
build a `Curation` and hand it to the same writer, so the same choices give the same dataset.

    curation = plan_curation(lengths=[90, 120, 75, 80], drop=[1], trims={2: Span(10, 60)})
    curation.describe(lengths)       # what the new dataset will hold, before anything is written
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from teleop.dataset.curate.errors import CurationError


@dataclass(frozen=True)
class Span:
    """Frames `start` (kept) to `stop` (not kept) of one episode."""

    start: int
    stop: int

    @property
    def frames(self) -> int:
        """How many frames the span keeps."""
        return self.stop - self.start

    def __str__(self) -> str:
        return f"{self.start}:{self.stop}"


@dataclass(frozen=True)
class Kept:
    """One episode of the new dataset: where it comes from and which of its frames it keeps."""

    new_index: int
    source_index: int
    span: Span
    source_frames: int

    @property
    def trimmed(self) -> bool:
        """Whether the episode loses frames."""
        return self.span.frames != self.source_frames


@dataclass(frozen=True)
class Curation:
    """The episodes a new dataset keeps, in order (each with its span of frames)."""

    kept: tuple[Kept, ...]
    source_episodes: int

    @property
    def dropped(self) -> tuple[int, ...]:
        """The source episodes left out, in order."""
        keep = {k.source_index for k in self.kept}
        return tuple(i for i in range(self.source_episodes) if i not in keep)

    @property
    def trims(self) -> bool:
        """Whether any kept episode loses frames (then videos are re-encoded: LeRobot's tools cut whole episodes)."""
        return any(k.trimmed for k in self.kept)

    @property
    def frames(self) -> int:
        """Frames of the new dataset."""
        return sum(k.span.frames for k in self.kept)

    def mapping(self) -> dict[int, int]:
        """Source episode index -> new episode index."""
        return {k.source_index: k.new_index for k in self.kept}

    def describe(self, fps: float) -> list[str]:
        """The preview, one line per fact: what the new dataset will hold."""
        lines = [
            f"{len(self.kept)} of {self.source_episodes} episodes kept, {self.frames} frames "
            f"({self.frames / fps:.1f} s at {fps:g} fps)",
        ]
        if self.dropped:
            lines.append(f"dropped: episodes {_ranges(self.dropped)}")
        for k in self.kept:
            if k.trimmed:
                lines.append(
                    f"episode {k.source_index} -> {k.new_index}: frames {k.span} of {k.source_frames} "
                    f"({k.span.frames / fps:.1f} s of {k.source_frames / fps:.1f} s)"
                )
        renumbered = [k for k in self.kept if k.new_index != k.source_index]
        if renumbered:
            lines.append("renumbered: " + ", ".join(f"{k.source_index}->{k.new_index}" for k in renumbered))
        return lines


def plan_curation(
    lengths: Sequence[int], drop: Sequence[int] = (), trims: Mapping[int, Span] | None = None
) -> Curation:
    """Keep every episode of a source with `lengths` frames each but `drop`, cutting `trims` (by source index).

    Raises:
        CurationError: an episode the source does not have, a span outside its episode or empty, a trim of
            a dropped episode, or nothing left to keep.
    """
    trims = dict(trims or {})
    count = len(lengths)
    for index in (*drop, *trims):
        if not 0 <= index < count:
            raise CurationError(f"episode {index}: the dataset has episodes 0-{count - 1}; check --drop and --trim")
    both = sorted(set(drop) & set(trims))
    if both:
        raise CurationError(f"episode {_ranges(both)} is both dropped and trimmed; give it to --drop or to --trim")
    kept: list[Kept] = []
    for index, frames in enumerate(lengths):
        if index in drop:
            continue
        span = trims.get(index, Span(0, frames))
        if not 0 <= span.start < span.stop <= frames:
            raise CurationError(
                f"episode {index}: frames {span} are not a part of its 0:{frames}; "
                f"give START:STOP with 0 <= START < STOP <= {frames}, e.g. --trim={index}:0:{frames}"
            )
        kept.append(Kept(len(kept), index, span, frames))
    if not kept:
        raise CurationError("nothing would be left: every episode is dropped; drop fewer with --drop")
    return Curation(tuple(kept), count)


def _ranges(indices: Sequence[int]) -> str:
    """1,2,3,7 -> "1-3, 7"."""
    parts: list[str] = []
    ordered = sorted(indices)
    start = previous = ordered[0]
    for index in [*ordered[1:], None]:
        if index is not None and index == previous + 1:
            previous = index
            continue
        parts.append(str(start) if start == previous else f"{start}-{previous}")
        if index is not None:
            start = previous = index
    return ", ".join(parts)
