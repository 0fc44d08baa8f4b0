"""Rubrics: criteria with level anchors tied to what the cameras show, loaded from YAML.

A rubric file names its criteria (each scored 0, 0.5 or 1), the views and phases that matter for
each, and what the motion heuristic may say about it. Its version is `name@<12 hex>`, a hash of the
parsed content, so comments and layout do not change it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from evaluation.errors import RubricError
from evaluation.vocabulary import SCORE_LEVELS, HeuristicSignal, Phase
from robot.joints import CAMERA_ROLES

DEFAULT_RUBRIC_PATH = Path(__file__).parent / "rubrics" / "cloth_fold.yaml"
_JUDGE_ON = ("process", "final_state")
_TOP_KEYS = {"name", "title", "task_description", "cameras", "guidance", "criteria"}
_CRITERION_KEYS = {"id", "name", "judge_on", "question", "views", "phases", "heuristic", "heuristic_max", "levels"}


@dataclass(frozen=True)
class LevelAnchor:
    """What a score level looks like in the images."""

    score: float  # 0, 0.5 or 1
    anchor: str  # observable description of this level


@dataclass(frozen=True)
class Criterion:
    """One rubric criterion, e.g. R3 push aside."""

    id: str  # short id used in prompts, schemas and the store, e.g. "R3"
    name: str  # human name, e.g. "push aside"
    judge_on: str  # "process" (what happened) or "final_state" (how it ended)
    question: str  # the question the judge answers
    views: tuple[str, ...]  # camera views that matter, most important first
    phases: tuple[Phase, ...]  # episode phases that matter
    heuristic: HeuristicSignal  # motion signal the heuristic check compares with
    heuristic_max: float  # highest score the motion heuristic may give (it cannot see the cloth)
    levels: tuple[LevelAnchor, ...]  # one anchor per level, highest score first


@dataclass(frozen=True)
class Rubric:
    """A versioned set of criteria with the camera geometry and judging guidance."""

    name: str  # short name, e.g. "cloth_fold"
    title: str  # one-line title
    task_description: str  # what the robot is asked to do
    cameras: tuple[tuple[str, str], ...]  # (view, where it is and what it shows)
    guidance: tuple[str, ...]  # general instructions to the judge
    criteria: tuple[Criterion, ...]  # in scoring order

    @property
    def criterion_ids(self) -> tuple[str, ...]:
        """Criterion ids in order, e.g. ("R1", "R2", "R3")."""
        return tuple(c.id for c in self.criteria)

    @property
    def max_total(self) -> float:
        """Highest possible total score."""
        return float(len(self.criteria))

    def to_dict(self) -> dict[str, Any]:
        """Plain, JSON-serialisable content (the input of the content hash)."""
        return {
            "name": self.name,
            "title": self.title,
            "task_description": self.task_description,
            "cameras": dict(self.cameras),
            "guidance": list(self.guidance),
            "criteria": [
                {
                    "id": c.id,
                    "name": c.name,
                    "judge_on": c.judge_on,
                    "question": c.question,
                    "views": list(c.views),
                    "phases": [p.value for p in c.phases],
                    "heuristic": c.heuristic.value,
                    "heuristic_max": c.heuristic_max,
                    "levels": [{"score": lv.score, "anchor": lv.anchor} for lv in c.levels],
                }
                for c in self.criteria
            ],
        }

    @property
    def content_hash(self) -> str:
        """SHA-256 (hex) of the canonical JSON of the content."""
        canonical = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    @property
    def version(self) -> str:
        """Version string stored with every run, e.g. `cloth_fold@1a2b3c4d5e6f`."""
        return f"{self.name}@{self.content_hash[:12]}"


def load_rubric(path: Path | None = None) -> Rubric:
    """Load and validate a rubric YAML file.

    Args:
        path: Rubric file; None loads the default cloth-folding rubric.

    Raises:
        RubricError: The file is missing, not YAML, or breaks a rule (the message names the field).
    """
    path = path or DEFAULT_RUBRIC_PATH
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise RubricError(
            f"rubric file {path} not found; pass --rubric_path=<file.yaml> or omit it for the default "
            f"rubric ({DEFAULT_RUBRIC_PATH})"
        ) from e
    except yaml.YAMLError as e:
        raise RubricError(f"rubric file {path} is not valid YAML: {e}") from e
    return parse_rubric(raw, source=str(path))


def parse_rubric(raw: object, source: str = "<memory>") -> Rubric:
    """Validate a parsed YAML document and build the rubric.

    Raises:
        RubricError: A field is missing, unknown or out of range; the message names it.
    """
    doc = _mapping(raw, source, "the document", _TOP_KEYS)
    for key in ("name", "title", "task_description", "criteria"):
        if key not in doc:
            raise RubricError(f"{source}: missing top-level field '{key}'")
    cameras_raw = _mapping(doc.get("cameras", {}), source, "cameras", set(CAMERA_ROLES))
    guidance = doc.get("guidance", [])
    if not isinstance(guidance, list) or not all(isinstance(g, str) for g in guidance):
        raise RubricError(f"{source}: 'guidance' must be a list of strings")
    criteria_raw = doc["criteria"]
    if not isinstance(criteria_raw, list) or not criteria_raw:
        raise RubricError(f"{source}: 'criteria' must be a non-empty list")
    criteria = tuple(_parse_criterion(c, source, i) for i, c in enumerate(criteria_raw))
    ids = [c.id for c in criteria]
    if len(set(ids)) != len(ids):
        raise RubricError(f"{source}: criterion ids must be unique, got {ids}")
    return Rubric(
        name=_text(doc["name"], source, "name"),
        title=_text(doc["title"], source, "title"),
        task_description=_text(doc["task_description"], source, "task_description"),
        cameras=tuple((view, _text(cameras_raw[view], source, f"cameras.{view}")) for view in sorted(cameras_raw)),
        guidance=tuple(g.strip() for g in guidance),
        criteria=criteria,
    )


def _parse_criterion(raw: object, source: str, index: int) -> Criterion:
    where = f"criteria[{index}]"
    doc = _mapping(raw, source, where, _CRITERION_KEYS)
    missing = sorted(_CRITERION_KEYS - set(doc) - {"heuristic", "heuristic_max"})
    if missing:
        raise RubricError(f"{source}: {where} is missing {missing}")
    cid = _text(doc["id"], source, f"{where}.id")
    if not cid.replace("_", "").isalnum() or len(cid) > 16:
        raise RubricError(f"{source}: {where}.id={cid!r} must be letters, digits or '_' (at most 16)")
    if doc["judge_on"] not in _JUDGE_ON:
        raise RubricError(f"{source}: {where}.judge_on={doc['judge_on']!r}; allowed: {list(_JUDGE_ON)}")
    views = _names(doc["views"], source, f"{where}.views", CAMERA_ROLES)
    phases = tuple(Phase(p) for p in _names(doc["phases"], source, f"{where}.phases", tuple(Phase)))
    heuristic_name = doc.get("heuristic", HeuristicSignal.NONE.value)
    allowed_signals = [s.value for s in HeuristicSignal]
    if heuristic_name not in allowed_signals:
        raise RubricError(f"{source}: {where}.heuristic={heuristic_name!r}; allowed: {allowed_signals}")
    heuristic_max = doc.get("heuristic_max", 1.0)
    if heuristic_max not in SCORE_LEVELS:
        raise RubricError(f"{source}: {where}.heuristic_max={heuristic_max!r}; allowed: {list(SCORE_LEVELS)}")
    return Criterion(
        id=cid,
        name=_text(doc["name"], source, f"{where}.name"),
        judge_on=doc["judge_on"],
        question=_text(doc["question"], source, f"{where}.question"),
        views=views,
        phases=phases,
        heuristic=HeuristicSignal(heuristic_name),
        heuristic_max=float(heuristic_max),
        levels=_parse_levels(doc["levels"], source, f"{where}.levels"),
    )


def _parse_levels(raw: object, source: str, where: str) -> tuple[LevelAnchor, ...]:
    if not isinstance(raw, list):
        raise RubricError(f"{source}: {where} must be a list of {{score, anchor}}")
    levels = []
    for i, item in enumerate(raw):
        doc = _mapping(item, source, f"{where}[{i}]", {"score", "anchor"})
        score = doc.get("score")
        if score not in SCORE_LEVELS:
            raise RubricError(f"{source}: {where}[{i}].score={score!r}; allowed: {list(SCORE_LEVELS)}")
        levels.append(LevelAnchor(score=float(score), anchor=_text(doc.get("anchor"), source, f"{where}[{i}].anchor")))
    scores = sorted((lv.score for lv in levels), reverse=True)
    if scores != sorted(SCORE_LEVELS, reverse=True):
        raise RubricError(
            f"{source}: {where} must give exactly one anchor per score {list(SCORE_LEVELS)}, got {scores}"
        )
    return tuple(sorted(levels, key=lambda lv: -lv.score))


def _mapping(raw: object, source: str, where: str, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise RubricError(f"{source}: {where} must be a mapping, got {type(raw).__name__}")
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise RubricError(f"{source}: unknown field(s) {unknown} in {where}; allowed: {sorted(allowed)}")
    return raw


def _text(raw: object, source: str, where: str) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise RubricError(f"{source}: {where} must be a non-empty string")
    return " ".join(raw.split())


def _names(raw: object, source: str, where: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    if not isinstance(raw, list) or not raw:
        raise RubricError(f"{source}: {where} must be a non-empty list; allowed items: {list(allowed)}")
    bad = [x for x in raw if x not in allowed]
    if bad or len(set(raw)) != len(raw):
        raise RubricError(f"{source}: {where}={raw!r} has unknown or repeated items; allowed: {list(allowed)}")
    return tuple(raw)
