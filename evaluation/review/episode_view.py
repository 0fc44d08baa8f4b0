"""What the episode page shows: videos (with their offsets in the shared MP4s), per-criterion evidence and history.

The judge's evidence comes from two places: `scores.evidence_frames_json` (frames cited by the
samples that agree with the label) and each call's parsed verdict (observations per frame, score,
confidence). Frame refs such as `overhead@12.40s` or `overhead@12.40s#372` are parsed here into
episode times so the page can seek to them; refs that do not parse are shown as text only.

Every score on the page names its source the way reports do (`vocabulary.source_label`): "judge
(<model>)" or "heuristic" for the scorer's record, "person" for an override, "live operator" for a
score the operator typed during the rollout (an override with reason "live"), so a heuristic episode
never reads as judged.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from evaluation.overrides import EffectiveScore, Override, overrides_of
from evaluation.review.catalog import CriterionInfo, EpisodeSummary, JudgedCriterion, ReviewCatalog
from evaluation.vocabulary import ScoreSource, source_label

_REF = re.compile(r"^(?P<view>[a-z_]+)@(?P<t>\d+(?:\.\d+)?)s(?:#(?P<frame>\d+))?$")


@dataclass(frozen=True)
class FrameRef:
    """A frame the judge cited."""

    ref: str  # as the judge wrote it
    view: str  # camera view ("" when the ref does not parse)
    time_s: float | None  # episode time, seconds (None when the ref does not parse)
    frame_index: int | None  # episode frame (None when the ref does not parse)


@dataclass(frozen=True)
class SampleVerdict:
    """One judge sample's answer for one criterion."""

    sample_index: int  # which repeated sample
    score: float | None  # 0, 0.5 or 1
    confidence: str  # low, medium, high
    uncertain: bool  # evidence insufficient
    observations: tuple[tuple[FrameRef, str], ...]  # (frame, note)
    evidence: tuple[FrameRef, ...]  # frames that decided the score


@dataclass(frozen=True)
class AuditEntry:
    """One line of a criterion's audit trail."""

    override: Override  # as stored
    value_before: float | None  # the effective score just before it was written (judge's, or the superseded one)

    @property
    def raced(self) -> bool:
        """The reviewer saw another score than the one on record when writing (a concurrent override).

        Never for an operator's live score: it was typed without seeing any score, by design.
        """
        if self.override.live:
            return False
        seen, before = self.override.old_score, self.value_before
        return seen != before and not (seen is not None and before is not None and abs(seen - before) < 1e-9)


@dataclass(frozen=True)
class CriterionDetail:
    """Everything about one criterion of one episode."""

    info: CriterionInfo  # rubric text
    judged: JudgedCriterion | None  # aggregate of the latest judge result
    effective: EffectiveScore | None  # what counts
    evidence: tuple[FrameRef, ...]  # frames cited by the agreeing samples
    samples: tuple[SampleVerdict, ...]  # per-sample observations
    trail: tuple[AuditEntry, ...]  # overrides of this criterion, oldest first
    scored_by: str  # who gave the scorer's record: "judge (<model>)", "heuristic", or "" when none
    effective_by: str  # who gave the effective score: the scorer's label, "person", or "none"


@dataclass(frozen=True)
class VideoView:
    """One camera's video element."""

    view: str  # e.g. "overhead"
    url: str  # media URL as the page links it: /media/<path in the dataset>, under the app's mount prefix
    from_s: float  # episode start inside the file, seconds
    to_s: float  # episode end inside the file, seconds


@dataclass(frozen=True)
class EpisodeDetail:
    """The episode page."""

    summary: EpisodeSummary  # the row of the list
    videos: tuple[VideoView, ...]  # in CAMERA_ROLES order
    criteria: tuple[CriterionDetail, ...]  # in rubric order
    failed_calls: int  # judge calls of the latest result that gave no usable verdict
    motion: dict[str, Any]  # the heuristic motion check, as stored ({} when none)
    scorer: str  # the latest result's scorer in words: "judge (<model>)", "heuristic", or "" when none
    scorer_kind: str  # "judge", "heuristic", or "" when none (for words such as "judge uncertain")


def parse_ref(ref: str, fps: int) -> FrameRef:
    """Parse a judge frame ref into an episode time (the frame suffix wins when present)."""
    m = _REF.match(ref.strip())
    if m is None:
        return FrameRef(ref, "", None, None)
    frame = int(m["frame"]) if m["frame"] else round(float(m["t"]) * fps)
    return FrameRef(ref, m["view"], frame / fps, frame)


def media_url(relative_path: str, base: str = "") -> str:
    """URL of a dataset file under /media/ (`base`: the prefix the app is mounted under, "" at the root)."""
    return f"{base}/media/" + quote(relative_path)


def episode_detail(catalog: ReviewCatalog, summary: EpisodeSummary, base: str = "") -> EpisodeDetail:
    """Gather the episode page's content (`base`: the prefix its video URLs get, "" at the root)."""
    ep = summary.episode
    root = catalog.source.root
    videos = tuple(
        VideoView(v.view, media_url(v.path.relative_to(root).as_posix(), base), v.from_timestamp_s, v.to_timestamp_s)
        for v in ep.videos
    )
    result = summary.result
    samples: dict[str, list[SampleVerdict]] = {}
    failed = 0
    if result is not None:
        parsed, failed = _verdicts(catalog, result.run_id, ep.index)
        for sample_index, verdict in sorted(parsed.items()):
            for criterion, answer in verdict.items():
                samples.setdefault(criterion, []).append(_sample(sample_index, answer, ep.fps))
    history = overrides_of(catalog.store, catalog.dataset_id, ep.index)
    under = _judge_scores_by_id(catalog, {o.judge_score_id for o in history if o.judge_score_id is not None})
    kind = "" if result is None else (ScoreSource.HEURISTIC if result.scorer == "heuristic" else ScoreSource.JUDGE)
    scorer = "" if result is None else source_label(kind, "" if kind is ScoreSource.HEURISTIC else result.model)
    criteria = []
    for info in catalog.criteria():
        judged = result.criteria.get(info.id) if result else None
        effective = summary.effective.get(info.id)
        criteria.append(
            CriterionDetail(
                info=info,
                judged=judged,
                effective=effective,
                evidence=tuple(parse_ref(r, ep.fps) for r in (judged.evidence_frames if judged else ())),
                samples=tuple(samples.get(info.id, ())),
                trail=_trail([o for o in history if o.criterion == info.id], under),
                scored_by=scorer if judged is not None else "",
                effective_by=_effective_by(effective, scorer),
            )
        )
    motion = result.motion_check if result else {}
    return EpisodeDetail(summary, videos, tuple(criteria), failed, motion, scorer, str(kind))


def _effective_by(effective: EffectiveScore | None, scorer: str) -> str:
    """Who gave the effective score: "person" for an override, "live operator" for a live score, else the scorer."""
    if effective is None or effective.source == "none":
        return "none"
    if effective.overridden_by is not None and effective.overridden_by.live:
        return ScoreSource.LIVE_OPERATOR.value
    if effective.source == "override":
        return source_label(effective.source)
    return scorer or source_label(effective.source)


def _judge_scores_by_id(catalog: ReviewCatalog, ids: set[int]) -> dict[int, float | None]:
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = catalog.store.query(f"SELECT id, score FROM scores WHERE id IN ({marks})", tuple(sorted(ids)))
    return {int(r["id"]): r["score"] for r in rows}


def _trail(history: list[Override], judge_scores: dict[int, float | None]) -> tuple[AuditEntry, ...]:
    """Audit entries; the value before each is the superseded override's, else the judge record's underneath."""
    by_id = {o.override_id: o for o in history}
    entries = []
    for o in history:
        if o.supersedes is not None and o.supersedes in by_id:
            before = by_id[o.supersedes].new_score
        else:
            before = judge_scores.get(o.judge_score_id) if o.judge_score_id is not None else None
        entries.append(AuditEntry(o, before))
    return tuple(entries)


def _verdicts(catalog: ReviewCatalog, run_id: str, episode: int) -> tuple[dict[int, dict[str, Any]], int]:
    """The usable verdict of each sample (a re-ask replaces an invalid first answer) and the failures."""
    rows = catalog.store.query(
        "SELECT sample_index, status, parsed_json FROM calls WHERE run_id = ? AND episode_index = ? ORDER BY call_id",
        (run_id, episode),
    )
    parsed: dict[int, dict[str, Any]] = {}
    for r in rows:
        if r["status"] == "ok" and r["parsed_json"]:
            value = json.loads(r["parsed_json"])
            if isinstance(value, dict):
                parsed[int(r["sample_index"])] = value
    failed = len({int(r["sample_index"]) for r in rows} - parsed.keys())
    return parsed, failed


def _sample(sample_index: int, answer: Any, fps: int) -> SampleVerdict:
    answer = answer if isinstance(answer, dict) else {}
    observations = tuple(
        (parse_ref(str(o.get("frame_ref", "")), fps), str(o.get("note", "")))
        for o in answer.get("observations", [])
        if isinstance(o, dict)
    )
    score = answer.get("score")
    return SampleVerdict(
        sample_index=sample_index,
        score=float(score) if isinstance(score, int | float) and not isinstance(score, bool) else None,
        confidence=str(answer.get("confidence", "")),
        uncertain=bool(answer.get("uncertain", False)),
        observations=observations,
        evidence=tuple(parse_ref(str(f), fps) for f in answer.get("evidence_frames", [])),
    )
