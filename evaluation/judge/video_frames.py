"""Decode frames at given times from one MP4 file with PyAV, as uint8 RGB arrays.

LeRobot v3.0 stores several episodes back to back in one file, so callers pass times inside the file
(`VideoSegment.file_time_s`). Times are decoded in ascending order; the decoder seeks backwards to a
keyframe only when the next time is behind it or far ahead, then decodes forward.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np

from evaluation.errors import FrameDecodeError

log = logging.getLogger(__name__)

_SEEK_AHEAD_S = 1.0  # decode forward instead of seeking when the next time is this close, seconds


@dataclass(frozen=True)
class DecodedFrame:
    """One decoded frame and the time it was found at."""

    requested_time_s: float  # time asked for, inside the file
    decoded_time_s: float  # presentation time of the frame returned, inside the file
    image: np.ndarray  # (height, width, 3) uint8 RGB


def decode_frames(path: Path, times_s: Sequence[float], tolerance_s: float) -> list[DecodedFrame]:
    """Decode the frames nearest to each requested time.

    Args:
        path: MP4 file.
        times_s: Times inside the file, seconds, any order (duplicates allowed).
        tolerance_s: Largest allowed distance between a requested time and the frame found, seconds
            (half a frame period is the natural choice).

    Returns:
        One frame per requested time, in the order requested.

    Raises:
        FrameDecodeError: The file cannot be opened, or no frame lies within the tolerance.
    """
    if not times_s:
        return []
    order = sorted(set(times_s))
    found: dict[float, DecodedFrame] = {}
    try:
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            time_base = float(stream.time_base)
            frames = None
            prev: tuple[float, av.VideoFrame] | None = None
            cur: tuple[float, av.VideoFrame] | None = None
            for target in order:
                if frames is None or cur is None or target < cur[0] - tolerance_s or target - cur[0] > _SEEK_AHEAD_S:
                    container.seek(max(0, int((target - 2 * tolerance_s) / time_base)), backward=True, stream=stream)
                    frames = container.decode(stream)
                    prev, cur = None, None
                while cur is None or cur[0] < target - tolerance_s:
                    frame = next(frames, None)
                    if frame is None:
                        break
                    if frame.pts is None:
                        continue
                    prev, cur = cur, (float(frame.pts) * time_base, frame)
                best = min((c for c in (prev, cur) if c is not None), key=lambda c: abs(c[0] - target), default=None)
                if best is None or abs(best[0] - target) > tolerance_s:
                    got = "nothing" if best is None else f"{best[0]:.4f} s"
                    raise FrameDecodeError(
                        f"{path}: no frame within {tolerance_s:.4f} s of {target:.4f} s (nearest: {got}); "
                        "the video may be shorter than the episode (dropped frames while recording)"
                    )
                found[target] = DecodedFrame(target, best[0], best[1].to_ndarray(format="rgb24"))
    except av.error.FFmpegError as e:
        raise FrameDecodeError(f"cannot decode {path}: {e}") from e
    log.debug("decoded %d frames from %s", len(found), path)
    return [found[t] for t in times_s]
