"""Choose the keyframes and views the judge sees.

Flow:

    events (grasp, release, push, final, ...) --ranked by phase--> keyframe slots (nearby events merge)
    --> uniform fill of the gaps between them, up to `num_keyframes`
    --> views per slot from the rubric (criteria whose phases include the slot's phase)
    --> image cap `max_images` (drop views of the least important slots first)
    --> optional perturbation for repeated samples (time jitter, view-order rotation)
"""

from __future__ import annotations

import hashlib
import itertools
import random
from dataclasses import dataclass, field, replace

from evaluation.config_checks import reject_non_finite
from evaluation.errors import ConfigError
from evaluation.judge.events import EpisodeEvents
from evaluation.rubric import Rubric
from evaluation.vocabulary import Phase, wrist_view
from robot.joints import CAMERA_ROLES, Side

# Lower ranks are kept first when the keyframe budget is short.
PHASE_RANK: dict[Phase, int] = {
    Phase.FINAL: 0,
    Phase.GRASP: 1,
    Phase.RELEASE: 1,
    Phase.PUSH: 2,
    Phase.LIFT: 3,
    Phase.START: 4,
    Phase.MOTION_END: 5,
    Phase.MOTION_ONSET: 6,
    Phase.FILL: 9,
}
_PINNED = (Phase.START, Phase.FINAL)  # never jittered: the first and last states are evidence


@dataclass(frozen=True)
class FrameConfig:
    """How many frames the judge sees, and how repeated samples perturb them."""

    num_keyframes: int = 10  # distinct moments per judge call: events first, then uniform fill
    max_images: int = 18  # images per judge call over all views (a 640x480 image is ~410 input tokens)
    min_gap_s: float = 0.5  # events closer than this share one keyframe, seconds
    fill_views: tuple[str, ...] = ("overhead",)  # views shown at uniform-fill keyframes
    jitter_s: float = 0.3  # repeated samples shift each keyframe by up to this (not start/final), seconds
    rotate_views: bool = True  # repeated samples rotate the view order within each keyframe
    jpeg_quality: int = 90  # JPEG quality of the images sent, 1..95 (native resolution, no resize)

    def __post_init__(self) -> None:
        """Validate the fields."""
        reject_non_finite(self, "frames")
        if self.num_keyframes < 2:
            raise ConfigError(f"frames.num_keyframes={self.num_keyframes} must be >= 2 (the start and the end)")
        if self.max_images < self.num_keyframes:
            raise ConfigError(
                f"frames.max_images={self.max_images} must be >= frames.num_keyframes={self.num_keyframes}"
            )
        if self.min_gap_s < 0 or self.jitter_s < 0:
            raise ConfigError("frames.min_gap_s and frames.jitter_s must be >= 0 seconds")
        bad = [v for v in self.fill_views if v not in CAMERA_ROLES]
        if bad or not self.fill_views:
            raise ConfigError(f"frames.fill_views={list(self.fill_views)}; allowed views: {list(CAMERA_ROLES)}")
        if not 1 <= self.jpeg_quality <= 95:
            raise ConfigError(f"frames.jpeg_quality={self.jpeg_quality}; allowed: 1..95")


@dataclass(frozen=True)
class PlannedFrame:
    """One keyframe: a frame index, why it was chosen, and which views to show."""

    frame_index: int  # frame within the episode
    phases: tuple[tuple[Phase, Side | None], ...]  # what happens here, most important first
    views: tuple[str, ...]  # views to show, in order

    @property
    def rank(self) -> int:
        """Importance (lower is more important)."""
        return min(PHASE_RANK[p] for p, _ in self.phases)

    def phase_label(self) -> str:
        """Readable phases, e.g. `grasp (left arm), lift (right arm)`."""
        return ", ".join(p.value if s is None else f"{p.value} ({s.value} arm)" for p, s in self.phases)


@dataclass(frozen=True)
class FramePlan:
    """The keyframes of one judge call, in time order."""

    episode_index: int  # episode within the dataset
    sample_index: int  # 0 for the unperturbed plan, k for the k-th perturbed sample
    fps: int  # frames per second
    frames: tuple[PlannedFrame, ...] = field(default_factory=tuple)  # sorted by frame index

    @property
    def num_images(self) -> int:
        """Images in the call (keyframes times views)."""
        return sum(len(f.views) for f in self.frames)


def plan_frames(
    events: EpisodeEvents, rubric: Rubric, config: FrameConfig, views: tuple[str, ...], episode_index: int
) -> FramePlan:
    """Place keyframes at events, fill uniformly, assign views and respect the image cap.

    Args:
        events: Events of the episode.
        rubric: Decides which views matter at which phase.
        config: Budget and spacing.
        views: Views available in the dataset.
        episode_index: Recorded in the plan.
    """
    last = events.length - 1
    gap = max(1, round(config.min_gap_s * events.fps))
    candidates = sorted(events.events, key=lambda e: (PHASE_RANK[e.phase], e.frame_index))
    slots: list[PlannedFrame] = []
    for ev in candidates:
        label = (ev.phase, ev.side)
        near = next((i for i, s in enumerate(slots) if abs(s.frame_index - ev.frame_index) < gap), None)
        if near is not None:
            slot = slots[near]
            if label not in slot.phases:
                slots[near] = replace(slot, phases=(*slot.phases, label))
        elif len(slots) < config.num_keyframes:
            slots.append(PlannedFrame(ev.frame_index, (label,), ()))
    fill = min(config.num_keyframes, events.length) - len(slots)
    slots += [
        PlannedFrame(i, ((Phase.FILL, None),), ()) for i in _uniform_fill([s.frame_index for s in slots], last, fill)
    ]
    slots = [replace(s, views=_views_for(s, rubric, config, views)) for s in slots]
    slots = _cap_images(slots, config.max_images)
    return FramePlan(episode_index, 0, events.fps, tuple(sorted(slots, key=lambda s: s.frame_index)))


def perturb(plan: FramePlan, sample_index: int, config: FrameConfig, length: int, seed: str) -> FramePlan:
    """A perturbed copy of a plan for repeated sample `sample_index` (0 returns the plan unchanged).

    Keyframes other than start and final move by up to `jitter_s` (deterministic for a seed and
    sample); view order rotates by the sample index.
    """
    if sample_index == 0:
        return plan
    digest = hashlib.sha256(f"{seed}:{sample_index}".encode()).hexdigest()
    rng = random.Random(int(digest[:16], 16))
    max_shift = round(config.jitter_s * plan.fps)
    frames = []
    used: set[int] = set()
    for f in plan.frames:
        index = f.frame_index
        if max_shift and not any(p in _PINNED for p, _ in f.phases):
            index = min(max(0, index + rng.randint(-max_shift, max_shift)), length - 1)
        if index in used:  # two keyframes must not collapse onto one frame
            index = f.frame_index
        used.add(index)
        views = f.views
        if config.rotate_views and len(views) > 1:
            k = sample_index % len(views)
            views = views[k:] + views[:k]
        frames.append(replace(f, frame_index=index, views=views))
    return replace(plan, sample_index=sample_index, frames=tuple(sorted(frames, key=lambda s: s.frame_index)))


def _uniform_fill(anchors: list[int], last: int, count: int) -> list[int]:
    """`count` frames spread evenly over the gaps between anchors (the widest gaps get the most)."""
    points = sorted({0, last, *anchors})
    gaps = list(itertools.pairwise(points))
    shares = [0] * len(gaps)
    for _ in range(max(0, count)):
        widest = max(range(len(gaps)), key=lambda i: (gaps[i][1] - gaps[i][0]) / (shares[i] + 1))
        if (gaps[widest][1] - gaps[widest][0]) / (shares[widest] + 1) < 2:
            break  # no room for another distinct frame
        shares[widest] += 1
    out = []
    for (a, b), n in zip(gaps, shares, strict=True):
        out += [a + round((b - a) * (k + 1) / (n + 1)) for k in range(n)]
    return [f for f in out if f not in anchors]


def _views_for(slot: PlannedFrame, rubric: Rubric, config: FrameConfig, available: tuple[str, ...]) -> tuple[str, ...]:
    """Views the rubric wants at this slot's phases, most useful first (dropped from the end)."""
    wanted: set[str] = set()
    primary = min(PHASE_RANK[p] for p, _ in slot.phases)
    sides = {side for p, side in slot.phases if side is not None and PHASE_RANK[p] == primary}
    for phase, side in slot.phases:
        for criterion in rubric.criteria:
            if phase in criterion.phases:
                other = wrist_view(Side.RIGHT if side == Side.LEFT else Side.LEFT) if side is not None else None
                wanted.update(v for v in criterion.views if v != other or other in map(wrist_view, sides))
    if not wanted:
        wanted = set(config.fill_views)
    # An arm's own event is best seen from its wrist; whole-scene moments from above. The most
    # important phase of the slot decides the order.
    preference = [*(wrist_view(s) for s in Side if s in sides), "overhead", *(wrist_view(s) for s in Side)]
    chosen = tuple(v for v in dict.fromkeys(preference) if v in wanted and v in available)
    return chosen or (available[0],)


def _cap_images(slots: list[PlannedFrame], max_images: int) -> list[PlannedFrame]:
    """Fit the image budget: drop fill slots (last placed first), then views, then whole slots."""
    slots = list(slots)

    def total() -> int:
        return sum(len(s.views) for s in slots)

    while total() > max_images and any(s.rank == PHASE_RANK[Phase.FILL] for s in slots):
        last_fill = max(i for i, s in enumerate(slots) if s.rank == PHASE_RANK[Phase.FILL])
        slots.pop(last_fill)
    while total() > max_images:
        order = sorted(range(len(slots)), key=lambda i: (-slots[i].rank, -len(slots[i].views), -slots[i].frame_index))
        multi = [i for i in order if len(slots[i].views) > 1]
        if multi:
            i = multi[0]
            slots[i] = replace(slots[i], views=slots[i].views[:-1])
        else:
            droppable = [i for i in order if slots[i].rank > PHASE_RANK[Phase.FINAL]]
            slots.pop(droppable[0])
    return slots
