"""Turn frame plans into labelled JPEG evidence, with a manifest that can replay the exact inputs.

Flow:

    plans (one per sample) --decode once per view--> frames --JPEG at native resolution--> images
    each image: ref (`overhead@12.40s`), label text, source file and time, SHA-256 of the JPEG bytes
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from evaluation.episode_source import EpisodeRecord
from evaluation.judge.frame_selection import FramePlan
from evaluation.judge.video_frames import DecodedFrame, decode_frames

FrameKey = tuple[str, int]  # (view, frame index within the episode)


@dataclass(frozen=True)
class EvidenceImage:
    """One image sent to the judge, and where it came from."""

    ref: str  # short reference the judge cites, e.g. "overhead@12.40s"
    view: str  # camera view
    frame_index: int  # frame within the episode
    time_s: float  # time within the episode, seconds
    phase_label: str  # why this moment was chosen, e.g. "grasp (left arm)"
    video_path: str  # MP4 file, relative to the dataset root
    file_time_s: float  # requested time inside the MP4 file, seconds
    decoded_time_s: float  # presentation time of the decoded frame inside the file, seconds
    width: int  # pixels
    height: int  # pixels
    jpeg: bytes  # the exact bytes sent
    sha256: str  # SHA-256 of `jpeg`, hex

    def label(self) -> str:
        """The text block placed right before the image in the prompt."""
        return (
            f"[{self.ref} | view {self.view} | t={self.time_s:.2f} s | frame {self.frame_index} | "
            f"phase: {self.phase_label}]"
        )

    def manifest(self) -> dict[str, object]:
        """Everything but the bytes, for the store."""
        return {
            "ref": self.ref,
            "view": self.view,
            "frame_index": self.frame_index,
            "time_s": round(self.time_s, 4),
            "phase": self.phase_label,
            "video_path": self.video_path,
            "file_time_s": round(self.file_time_s, 6),
            "decoded_time_s": round(self.decoded_time_s, 6),
            "width": self.width,
            "height": self.height,
            "jpeg_bytes": len(self.jpeg),
            "sha256": self.sha256,
        }


@dataclass(frozen=True)
class EvidencePack:
    """The images of one judge call, in time order."""

    episode_index: int  # episode within the dataset
    sample_index: int  # which repeated sample
    images: tuple[EvidenceImage, ...]  # time order; within a keyframe, the plan's view order

    @property
    def refs(self) -> frozenset[str]:
        """All image refs in the pack."""
        return frozenset(i.ref for i in self.images)

    def manifest(self) -> list[dict[str, object]]:
        """Per-image manifest (no bytes)."""
        return [i.manifest() for i in self.images]


def frame_ref(view: str, time_s: float) -> str:
    """Reference of an image, e.g. `overhead@12.40s`."""
    return f"{view}@{time_s:.2f}s"


def decode_plans(episode: EpisodeRecord, plans: Sequence[FramePlan]) -> dict[FrameKey, DecodedFrame]:
    """Decode every (view, frame) used by any of the plans, once per view file."""
    wanted: dict[str, set[int]] = {}
    for plan in plans:
        for f in plan.frames:
            for view in f.views:
                wanted.setdefault(view, set()).add(f.frame_index)
    decoded: dict[FrameKey, DecodedFrame] = {}
    for view, indices in wanted.items():
        segment = episode.video(view)
        ordered = sorted(indices)
        times = [segment.file_time_s(i, episode.fps) for i in ordered]
        frames = decode_frames(segment.path, times, tolerance_s=0.5 / episode.fps)
        decoded.update({(view, i): fr for i, fr in zip(ordered, frames, strict=True)})
    return decoded


class JpegCache:
    """Encodes each decoded frame to JPEG once (repeated samples share most frames). Not thread-safe."""

    def __init__(self, quality: int) -> None:
        """Remember the JPEG quality (1..95)."""
        self.quality = quality
        self._cache: dict[FrameKey, tuple[bytes, str]] = {}

    def get(self, key: FrameKey, image: np.ndarray) -> tuple[bytes, str]:
        """JPEG bytes and their SHA-256 for a frame."""
        if key not in self._cache:
            buf = io.BytesIO()
            Image.fromarray(image).save(buf, format="JPEG", quality=self.quality)
            data = buf.getvalue()
            self._cache[key] = (data, hashlib.sha256(data).hexdigest())
        return self._cache[key]


def build_pack(
    episode: EpisodeRecord,
    plan: FramePlan,
    decoded: dict[FrameKey, DecodedFrame],
    jpegs: JpegCache,
    dataset_root: Path,
) -> EvidencePack:
    """Labelled evidence images for one plan (frames must be in `decoded`)."""
    images: list[EvidenceImage] = []
    seen: set[str] = set()
    for f in plan.frames:
        time_s = f.frame_index / episode.fps
        for view in f.views:
            frame = decoded[(view, f.frame_index)]
            data, digest = jpegs.get((view, f.frame_index), frame.image)
            segment = episode.video(view)
            ref = frame_ref(view, time_s)
            if ref in seen:
                ref = f"{ref}#{f.frame_index}"
            seen.add(ref)
            images.append(
                EvidenceImage(
                    ref=ref,
                    view=view,
                    frame_index=f.frame_index,
                    time_s=time_s,
                    phase_label=f.phase_label(),
                    video_path=str(segment.path.relative_to(dataset_root)),
                    file_time_s=frame.requested_time_s,
                    decoded_time_s=frame.decoded_time_s,
                    width=int(frame.image.shape[1]),
                    height=int(frame.image.shape[0]),
                    jpeg=data,
                    sha256=digest,
                )
            )
    return EvidencePack(plan.episode_index, plan.sample_index, tuple(images))
