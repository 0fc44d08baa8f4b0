"""The virtual rig's ground truth for the cloth-fold rubric: R1, R2 and R3 measured on the cloth itself.

The camera judge scores an episode from images; on the virtual rig the cloth's points are known,
so the same three criteria can be measured (docs/ground_truth.md says it for people):

    ClothHistory --> ClothFrames (cloth frame at the reset) --> R1 from the whole history
                                                             --> R2 from the last step
                                                             --> R3 from the last step vs the fold

Everything is measured in the cloth's frame at the reset, so its pose does not matter, and against
all four middle lines of the grid in both directions, so no edge pair, corner or arm is assumed.
What counts as folding is measured between the cloth's own points (an edge closing on its mirror
partners, a point lying on its partner), so sliding or turning the whole cloth on the table, as a
drag does, neither starts nor undoes a fold.
"""

from dataclasses import dataclass

import numpy as np

from robot.cameras.virtual.cloth import GRASP_RADIUS_M
from robot.cameras.virtual.cloth_history import ClothHistory
from robot.cameras.virtual.cloth_measures import (
    LINES_DEG,
    ClothFrames,
    covered_share,
    line_normal,
    mirror_partners,
    pair_gaps_m,
)

# Bump when a definition or constant below changes. @2: carry measured between mirror partners (a drag
# of the whole cloth is no carry); "right after the fold" found until the cloth's centre leaves the footprint.
TRUTH_DEFINITION = "cloth_truth@2"

# R1: fold initiation.
EDGE_ZONE_SIDES = 0.25  # "at an edge": within a quarter side of the points farthest from the fold line
SNAP_M = GRASP_RADIUS_M  # a grasp pulls its point onto the jaws from up to this far: not yet a carry
LIFT_FROM_M = 0.02  # a clamp holds its point at most this high; above it the edge starts to count as lifted
LIFT_FULL_M = 0.05  # an edge point this high is a fold under way
STAY_M = 0.03  # the opposite edge "stays put" while it moves less than this on average (not at all at twice)
CLAMP_HEIGHT_M = 0.03  # a point held at most this high, near where it lay, is clamped
PAIR_SEPARATION_SIDES = 0.5  # two holds at once this far apart (where their points lay): a clamp and a grasp
GRASP_LEVEL = 0.5  # R1 for a clamp and a grasp that moved nothing (the rubric's 0.5)
SINGLE_HOLD_LEVEL = 0.25  # R1 for a lone hold that moved nothing: it cannot be told from a clamp whose fold never came

# R2: fold completion.
PAIR_TOLERANCE_M = GRASP_RADIUS_M  # mirror partners this close lie on each other
# Covered share of the flat area that is a full fold: 0.5 when neat, a little more when off the middle,
# down to half that when a fold was narrowed (drawn together behind a grip, or laid short of the middle line).
AREA_FULL = (0.25, 0.6)
AREA_NONE = (0.1, 1.0)  # ... and that is none: balled up or pulled into a rope, or flat
HELD_AT_END_FACTOR = 0.5  # a fold still held at the end is the rubric's partial fold
REST_HEIGHT_M = 0.01  # a point at most this high lies on the table (or on the other layer)
RASTER_CELLS_PER_SIDE = 64  # the covered area is counted on cells of side / this (3.4 mm on a 22 cm cloth)

# R3: push aside.
FOOTPRINT_MARGIN_SIDES = 0.05  # the footprint: the tidy cloth's square grown by this (sides)
REF_SLACK = 0.05  # "right after the fold": the earliest candidate whose fold is this close to the best
MIN_FOLD = 0.2  # a fold score below this right after the fold means there was no fold to keep (flat: about 0)
UNFOLDED_PUSH_FACTOR = 0.5  # a push that loses the whole fold keeps this share of R3 (the rubric's 0.5)
_MAX_CANDIDATES = 64  # moments rasterized as "right after the fold", at most (each costs a few ms)


@dataclass(frozen=True)
class ClothTruth:
    """The three scores and the numbers behind them."""

    scores: dict[str, float]  # "R1", "R2", "R3", each 0..1
    facts: dict[str, float]  # measured numbers, named with units (docs/ground_truth.md lists them)

    def as_json(self) -> dict[str, object]:
        """Plain JSON: the definition's version, the scores and the facts, as Python floats."""
        return {
            "definition": TRUTH_DEFINITION,
            "scores": {key: float(value) for key, value in self.scores.items()},
            "facts": {key: float(value) for key, value in self.facts.items()},
        }


def cloth_truth(history: ClothHistory) -> ClothTruth:
    """Score an episode's cloth. Never raises on finite data; under two steps (or no square grid) every score is 0."""
    frames = ClothFrames.of(history)
    if frames is None:
        return ClothTruth({"R1": 0.0, "R2": 0.0, "R3": 0.0}, {"steps": float(len(history)), "too_short": 1.0})
    facts = {"steps": float(len(frames.times_s)), "duration_s": float(frames.times_s[-1] - frames.times_s[0])}
    r1 = _fold_initiation(frames, facts)
    r2, r3 = _fold_and_push(frames, facts)
    return ClothTruth({"R1": r1, "R2": r2, "R3": r3}, facts)


# ---- R1: fold initiation ----------------------------------------------------------------------


def _fold_initiation(frames: ClothFrames, facts: dict[str, float]) -> float:
    held_any = bool(frames.holding.any())
    pair = _clamp_and_grasp(frames)
    best = max(_fold_motion(frames, line, sign) for line in LINES_DEG for sign in (1.0, -1.0))
    motion, lift_m, carry, anchor = best
    level = GRASP_LEVEL if pair else SINGLE_HOLD_LEVEL
    facts.update(
        held_any=float(held_any),
        clamp_and_grasp=float(pair),
        fold_motion=motion,
        lift_max_m=lift_m,
        carry_max=carry,
        anchor_kept=anchor,
    )
    return level + (1.0 - level) * motion if held_any else 0.0


def _clamp_and_grasp(frames: ClothFrames) -> bool:
    """Whether two grippers ever held points at once that lay far apart (a clamp and a grasp)."""
    if frames.held.shape[1] < 2:
        return False
    both = frames.holding[:, 0] & frames.holding[:, 1]
    first, second = frames.held[both, 0], frames.held[both, 1]
    apart = np.linalg.norm(frames.uv0[first] - frames.uv0[second], axis=1)
    return bool((apart >= PAIR_SEPARATION_SIDES).any())


def _fold_motion(frames: ClothFrames, line_deg: float, sign: float) -> tuple[float, float, float, float]:
    """How far one half (`sign` picks which) was folded across a middle line onto the other, while the other stayed.

    Per step: motion = anchor * max(lift, carry), each 0..1. Returns the best step's motion, the
    highest lift (metres) and carry of the episode, and the anchor at the best step.
    """
    d0 = frames.uv0 @ (sign * line_normal(line_deg))  # signed distance from the line, sides; the carried half < 0
    carried_zone = d0 <= d0.min() + EDGE_ZONE_SIDES
    carried_edge = np.flatnonzero(d0 <= d0.min() + 0.5 / (frames.n - 1))  # the row (or corner) farthest from it
    anchor_zone = d0 >= d0.max() - EDGE_ZONE_SIDES
    # Carry: how far an edge point closed on its mirror partner, past what a grasp's snap explains, as a
    # share of half the flat gap (the edge at the line). Between the cloth's points: a drag is no carry.
    partner = mirror_partners(frames.n, line_deg)[carried_edge]
    gap_m = np.linalg.norm(frames.metres(carried_edge) - frames.metres(partner), axis=-1)
    to_line_m = -d0[carried_edge] * frames.size_m  # flat, an edge point lies twice this from its partner
    closed_m = 2 * to_line_m - gap_m
    carry = np.clip((closed_m - SNAP_M) / np.maximum(to_line_m - SNAP_M, 1e-6), 0.0, 1.0).max(axis=1)
    lift_m = frames.z_m[:, carried_zone].max(axis=1)
    lift = np.clip((lift_m - LIFT_FROM_M) / (LIFT_FULL_M - LIFT_FROM_M), 0.0, 1.0)
    drift = np.linalg.norm(frames.uv[:, anchor_zone] - frames.uv0[anchor_zone], axis=2).mean(axis=1)
    stay = np.clip((2 * STAY_M - drift * frames.size_m) / STAY_M, 0.0, 1.0)
    anchor = np.maximum(stay, _clamped(frames, anchor_zone))
    motion = anchor * np.maximum(lift, carry)
    step = int(np.argmax(motion))
    return float(motion[step]), float(lift_m.max()), float(carry.max()), float(anchor[step])


def _clamped(frames: ClothFrames, zone: np.ndarray) -> np.ndarray:
    """(T,) 1 where a gripper holds a point of `zone` low and near where it lay, else 0."""
    steps = np.arange(len(frames.held))
    clamped = np.zeros(len(frames.held))
    for column, valid in zip(frames.held.T, frames.holding.T, strict=True):
        index = np.where(valid, column, 0)
        moved_m = np.linalg.norm(frames.uv[steps, index] - frames.uv0[index], axis=1) * frames.size_m
        low = frames.z_m[steps, index] <= CLAMP_HEIGHT_M
        clamped = np.maximum(clamped, valid & zone[index] & low & (moved_m <= SNAP_M + STAY_M))
    return clamped


# ---- R2: fold completion, R3: push aside ------------------------------------------------------


def _fold_and_push(frames: ClothFrames, facts: dict[str, float]) -> tuple[float, float]:
    tightness = np.stack([_tightness(frames, line) for line in LINES_DEG], axis=1)  # (T, lines)
    area_final = covered_share(frames.uv[-1], frames.n, RASTER_CELLS_PER_SIDE)
    line_final = int(np.argmax(tightness[-1]))
    fold_final = min(float(tightness[-1, line_final]), _area_score(area_final))
    held_at_end = bool(frames.holding[-1].any())
    resting = float((frames.z_m[-1] <= REST_HEIGHT_M).mean())
    r2 = fold_final * (HELD_AT_END_FACTOR if held_at_end else 1.0) * resting

    ref, fold_ref, line_ref = _after_fold(frames, tightness)
    kept_fold = min(float(tightness[-1, line_ref]), _area_score(area_final))
    kept = min(1.0, kept_fold / fold_ref) if fold_ref >= MIN_FOLD else 0.0
    outside_ref, outside_final = _outside_share(frames.uv[ref]), _outside_share(frames.uv[-1])
    clearance = float(np.clip((outside_final - outside_ref) / max(1.0 - outside_ref, 1e-6), 0.0, 1.0))
    r3 = clearance * (UNFOLDED_PUSH_FACTOR + (1.0 - UNFOLDED_PUSH_FACTOR) * kept)
    gaps_m, distance = pair_gaps_m(frames, LINES_DEG[line_final])
    facts.update(
        fold_line_deg=LINES_DEG[line_final],
        pair_gap_m=float((gaps_m[-1] * distance).sum() / max(distance.sum(), 1e-9)),
        tightness=float(tightness[-1, line_final]),
        covered_share=area_final,
        fold=fold_final,
        held_at_end=float(held_at_end),
        resting_share=resting,
        after_fold_s=float(frames.times_s[ref] - frames.times_s[0]),
        fold_after_fold=fold_ref,
        fold_kept=kept,
        outside_share_after_fold=outside_ref,
        outside_share=outside_final,
        clearance=clearance,
    )
    return r2, r3


def _tightness(frames: ClothFrames, line_deg: float) -> np.ndarray:
    """(T,) how well points lie on their mirror partners: 1 within PAIR_TOLERANCE_M, 0 as far apart as when flat.

    Points far from the line weigh more: they are what a fold carries, and a flat cloth keeps them farthest apart.
    """
    gaps_m, distance = pair_gaps_m(frames, line_deg)
    excess_m = (np.maximum(gaps_m - PAIR_TOLERANCE_M, 0.0) * distance).sum(axis=1)
    flat_m = (np.maximum(2 * distance * frames.size_m - PAIR_TOLERANCE_M, 0.0) * distance).sum()
    return np.clip(1.0 - excess_m / max(flat_m, 1e-9), 0.0, 1.0)


def _area_score(share: float) -> float:
    """1 for a covered share in AREA_FULL, falling linearly to 0 at either end of AREA_NONE."""
    if share < AREA_FULL[0]:
        return float(np.clip((share - AREA_NONE[0]) / (AREA_FULL[0] - AREA_NONE[0]), 0.0, 1.0))
    return float(np.clip((AREA_NONE[1] - share) / (AREA_NONE[1] - AREA_FULL[1]), 0.0, 1.0))


def _after_fold(frames: ClothFrames, tightness: np.ndarray) -> tuple[int, float, int]:
    """The step "right after the fold", its fold score and its line.

    Candidates are the steps just before any grasp or release (the cloth as each phase left it),
    the first and the last, taken only until the cloth's centre (the mean of its points) first
    leaves the footprint: the fold is made where the cloth lay, and a push begins when the cloth
    leaves it. A fold's overhang does not move the centre out: half the cloth stays in place.
    Of those, the earliest whose fold is within REF_SLACK of the best.
    """
    centre = frames.uv.mean(axis=1)
    away = np.flatnonzero(np.abs(centre).max(axis=1) > 0.5 + FOOTPRINT_MARGIN_SIDES)
    until = int(away[0]) if len(away) else len(frames.held)
    changed = np.flatnonzero((frames.held[1:] != frames.held[:-1]).any(axis=1))
    candidates = np.unique(np.concatenate([[0], changed, [len(frames.held) - 1]]))
    in_place = [int(step) for step in candidates if step < until] or [0]
    lines = {step: int(np.argmax(tightness[step])) for step in in_place}
    folds: dict[int, float] = {}
    best = 0.0
    # A fold score is at most its tightness: rasterize only the candidates that could still be the best.
    for step in sorted(in_place, key=lambda step: -tightness[step, lines[step]])[:_MAX_CANDIDATES]:
        if tightness[step, lines[step]] < best - REF_SLACK:
            break
        area = _area_score(covered_share(frames.uv[step], frames.n, RASTER_CELLS_PER_SIDE))
        folds[step] = min(float(tightness[step, lines[step]]), area)
        best = max(best, folds[step])
    ref = min(step for step, fold in folds.items() if fold >= best - REF_SLACK)
    return ref, folds[ref], lines[ref]


def _outside_share(uv: np.ndarray) -> float:
    """Share of the points outside the tidy cloth's square grown by the margin."""
    return float((np.abs(uv).max(axis=1) > 0.5 + FOOTPRINT_MARGIN_SIDES).mean())
