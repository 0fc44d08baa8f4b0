"""Our sidecars, carried into a curated dataset: renumbered, cut to the kept frames, never another episode's.

Only a sidecar that still belongs to its source episode (`sidecar.check_all`) is carried; the rest
are named and left behind, so the new dataset never inherits a stale one. A trimmed episode's timing
rows are cut to its span and numbered from 0; its quality card gets the new frame count, duration
and idle share (recounted from the kept states by the card's own rule), and `trimmed_from` says
which frames of how many it kept: its other counts (lost camera frames, limit hits, the gates'
verdict) describe the whole recording.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from teleop.dataset.curate.plan import Kept
from teleop.dataset.sidecar import (
    TIMING_FILE,
    check_all,
    episode_dir,
    idle_frames,
    quality_json,
    read_quality,
    write_quality,
)


@dataclass(frozen=True)
class Carried:
    """What happened to the sidecars of a curation's source episodes."""

    carried: tuple[int, ...]  # new indices that got their episode's sidecar
    left_behind: tuple[str, ...]  # "episode 3: why", for stale ones (missing ones are not named: nothing to carry)


def carry_sidecars(source: Path, out: Path, kept: Sequence[Kept], fps: float) -> Carried:
    """Write each kept episode's sidecar into `out`, as the episode it became there."""
    checks = {check.index: check for check in check_all(source)}
    carried, left = [], []
    for episode in kept:
        check = checks.get(episode.source_index)
        if check is None or check.status == "missing":
            continue
        if not check.usable:
            left.append(f"episode {episode.source_index}: {check.reason}")
            continue
        _carry(source, out, episode, fps)
        carried.append(episode.new_index)
    return Carried(tuple(carried), tuple(left))


def _carry(source: Path, out: Path, episode: Kept, fps: float) -> None:
    span = episode.span
    timing = pq.read_table(episode_dir(source, episode.source_index) / TIMING_FILE).slice(span.start, span.frames)
    timing = timing.set_column(
        timing.column_names.index("frame_index"), "frame_index", pa.array(np.arange(span.frames, dtype=np.int64))
    )
    target = episode_dir(out, episode.new_index)
    target.mkdir(parents=True, exist_ok=True)
    pq.write_table(timing, target / TIMING_FILE)
    card = read_quality(source, episode.source_index)
    card["episode"] = episode.new_index
    if episode.trimmed:
        card["frames"] = span.frames
        card["duration_s"] = round(span.frames / fps, 3)
        states = [name.removeprefix("state.") for name in timing.column_names if name.startswith("state.")]
        if states:
            matrix = np.column_stack([timing.column(f"state.{name}").to_numpy() for name in states])
            card["idle_fraction"] = round(float(idle_frames(matrix, states, fps).mean()), 4)
        card["trimmed_from"] = {"frames": episode.source_frames, "start": span.start, "stop": span.stop}
    write_quality(out, episode.new_index, quality_json(card))
