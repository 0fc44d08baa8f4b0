"""The judge's output contract: a JSON schema built from the rubric, and its validation.

Per criterion the judge writes observations first (each citing a frame ref), then the evidence
frames, the score (0, 0.5 or 1), its confidence and whether it is uncertain. The schema is sent as
`output_config.format` (constrained decoding); replies are validated again here, because a reply can
still be cut short, refused or malformed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from evaluation.rubric import Rubric
from evaluation.vocabulary import SCORE_LEVELS

CONFIDENCE_LEVELS: tuple[str, ...] = ("low", "medium", "high")
_CRITERION_FIELDS = ("observations", "evidence_frames", "score", "confidence", "uncertain")
_REF = re.compile(r"^(?P<view>[a-z_]+)@(?P<t>\d+(?:\.\d+)?)s$")


@dataclass(frozen=True)
class Observation:
    """One thing the judge saw in one frame."""

    frame_ref: str  # e.g. "overhead@12.40s"
    note: str  # what it saw


@dataclass(frozen=True)
class CriterionVerdict:
    """The judge's answer for one criterion in one sample."""

    criterion: str  # e.g. "R3"
    observations: tuple[Observation, ...]  # evidence first
    evidence_frames: tuple[str, ...]  # refs of the frames that decided the score
    score: float  # 0, 0.5 or 1
    confidence: str  # "low", "medium" or "high"
    uncertain: bool  # the judge says the evidence is missing or ambiguous


@dataclass(frozen=True)
class Verdict:
    """A validated reply: one verdict per rubric criterion, in rubric order."""

    criteria: tuple[CriterionVerdict, ...]

    def get(self, criterion: str) -> CriterionVerdict:
        """The verdict for a criterion id."""
        return next(c for c in self.criteria if c.criterion == criterion)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (the parsed result stored with the call)."""
        return {
            c.criterion: {
                "observations": [{"frame_ref": o.frame_ref, "note": o.note} for o in c.observations],
                "evidence_frames": list(c.evidence_frames),
                "score": c.score,
                "confidence": c.confidence,
                "uncertain": c.uncertain,
            }
            for c in self.criteria
        }


def output_schema(rubric: Rubric) -> dict[str, Any]:
    """The JSON schema of a reply, in the strict subset structured outputs accept.

    One shared definition per criterion (`$defs/criterion`) keeps the schema short: it is sent, and
    billed, with every call. The criteria themselves are described in the system prompt.
    """
    criterion = {
        "type": "object",
        "properties": {
            "observations": {
                "type": "array",
                "description": "Before deciding: what relevant frames show, each cited by its ref.",
                "items": {
                    "type": "object",
                    "properties": {"frame_ref": {"type": "string"}, "note": {"type": "string"}},
                    "required": ["frame_ref", "note"],
                    "additionalProperties": False,
                },
            },
            "evidence_frames": {"type": "array", "items": {"type": "string"}},
            "score": {"enum": list(SCORE_LEVELS)},
            "confidence": {"enum": list(CONFIDENCE_LEVELS)},
            "uncertain": {"type": "boolean", "description": "Evidence missing, occluded or ambiguous."},
        },
        "required": list(_CRITERION_FIELDS),
        "additionalProperties": False,
    }
    return {
        "$defs": {"criterion": criterion},
        "type": "object",
        "properties": {cid: {"$ref": "#/$defs/criterion"} for cid in rubric.criterion_ids},
        "required": list(rubric.criterion_ids),
        "additionalProperties": False,
    }


def parse_verdict(text: str, rubric: Rubric, refs: frozenset[str]) -> tuple[Verdict | None, list[str]]:
    """Parse and validate a reply.

    Args:
        text: The reply text (expected to be one JSON object).
        rubric: Decides which criteria must be present.
        refs: Frame refs that were sent; citations must match one of them (a ref with a slightly
            different time format, e.g. `overhead@12.4s`, is matched to the nearest sent frame).

    Returns:
        The verdict and an empty list, or None and the validation errors (each names the field).
    """
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        return None, [f"reply is not JSON: {e.msg} at character {e.pos}"]
    if not isinstance(doc, dict):
        return None, [f"reply must be a JSON object, got {type(doc).__name__}"]
    errors: list[str] = []
    unknown = sorted(set(doc) - set(rubric.criterion_ids))
    if unknown:
        errors.append(f"unknown criteria {unknown}; expected {list(rubric.criterion_ids)}")
    verdicts = []
    for cid in rubric.criterion_ids:
        if cid not in doc:
            errors.append(f"{cid}: missing")
            continue
        verdict = _criterion(cid, doc[cid], refs, errors)
        if verdict is not None:
            verdicts.append(verdict)
    if errors:
        return None, errors
    return Verdict(tuple(verdicts)), []


def _criterion(cid: str, raw: object, refs: frozenset[str], errors: list[str]) -> CriterionVerdict | None:
    if not isinstance(raw, dict):
        errors.append(f"{cid}: must be an object")
        return None
    before = len(errors)
    missing = [f for f in _CRITERION_FIELDS if f not in raw]
    extra = sorted(set(raw) - set(_CRITERION_FIELDS))
    if missing:
        errors.append(f"{cid}: missing fields {missing}")
    if extra:
        errors.append(f"{cid}: unknown fields {extra}")
    if missing:
        return None
    score = raw["score"]
    if isinstance(score, bool) or not isinstance(score, int | float) or float(score) not in SCORE_LEVELS:
        errors.append(f"{cid}.score={score!r}; allowed: {list(SCORE_LEVELS)}")
    if raw["confidence"] not in CONFIDENCE_LEVELS:
        errors.append(f"{cid}.confidence={raw['confidence']!r}; allowed: {list(CONFIDENCE_LEVELS)}")
    if not isinstance(raw["uncertain"], bool):
        errors.append(f"{cid}.uncertain must be true or false, got {raw['uncertain']!r}")
    observations = []
    if not isinstance(raw["observations"], list):
        errors.append(f"{cid}.observations must be a list")
    else:
        for i, obs in enumerate(raw["observations"]):
            if (
                not isinstance(obs, dict)
                or not isinstance(obs.get("frame_ref"), str)
                or not isinstance(obs.get("note"), str)
            ):
                errors.append(f"{cid}.observations[{i}] must be {{frame_ref: str, note: str}}")
                continue
            ref = match_ref(obs["frame_ref"], refs)
            if ref is None:
                errors.append(f"{cid}.observations[{i}].frame_ref={obs['frame_ref']!r} is not a frame that was sent")
            else:
                observations.append(Observation(ref, obs["note"]))
    evidence = []
    if not isinstance(raw["evidence_frames"], list) or not all(isinstance(r, str) for r in raw["evidence_frames"]):
        errors.append(f"{cid}.evidence_frames must be a list of frame refs")
    else:
        for r in raw["evidence_frames"]:
            ref = match_ref(r, refs)
            if ref is None:
                errors.append(f"{cid}.evidence_frames cites {r!r}, which is not a frame that was sent")
            else:
                evidence.append(ref)
    if len(errors) > before:
        return None
    return CriterionVerdict(
        cid, tuple(observations), tuple(evidence), float(score), raw["confidence"], raw["uncertain"]
    )


def match_ref(ref: str, refs: frozenset[str], tolerance_s: float = 0.02) -> str | None:
    """The sent ref a citation means, or None (exact match, else same view within `tolerance_s`)."""
    if ref in refs:
        return ref
    m = _REF.match(ref.strip())
    if m is None:
        return None
    best: tuple[float, str] | None = None
    for sent in refs:
        s = _REF.match(sent.split("#")[0])
        if s is None or s["view"] != m["view"]:
            continue
        dt = abs(float(s["t"]) - float(m["t"]))
        if dt <= tolerance_s and (best is None or dt < best[0]):
            best = (dt, sent)
    return None if best is None else best[1]
