"""What the episodes page lists: per episode the latest current judge result, effective scores, flags and filters.

Virtual ground truth (evaluation/truth.py) is read apart and shown beside the scores: it is never
a judge result, so it is neither overridden, nor routed, nor counted as judged.

Everything is read from the store on each request (a few queries; stores hold hundreds of episodes,
not millions), so a page always shows what is on record, overrides from other reviewers included.
Only records made on the episode as the opened dataset holds it count (evaluation.currency): the
fingerprints are computed once, when the catalog first needs them, and `stale()` says what was left out.
The random audit sample is reproducible: episodes are ranked by a hash of (seed, dataset, index) and
the first `ceil(fraction * n)` judged episodes are taken, whatever the judge said about them.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from evaluation.currency import CurrentResults, ResultRef, StaleResult, episodes_now, select_current
from evaluation.episode_facts import EpisodeFacts, episode_facts
from evaluation.episode_source import DatasetSource, EpisodeRecord
from evaluation.overrides import EffectiveScore, Override, effective_scores, stale_overrides
from evaluation.review.config import AuditConfig
from evaluation.review.filters import REVIEW_STATUSES as REVIEW_STATUSES  # re-exported for the app
from evaluation.review.filters import EpisodeFilter
from evaluation.rubric import load_rubric
from evaluation.store import EvaluationStore
from evaluation.truth import NOT_TRUTH, TruthRecord, current_truth


@dataclass(frozen=True)
class CriterionInfo:
    """A rubric criterion as the page shows it."""

    id: str  # e.g. "R3"
    name: str  # e.g. "push aside"
    question: str  # what the judge answers
    levels: tuple[tuple[float, str], ...]  # (score, anchor), highest first


@dataclass(frozen=True)
class JudgedCriterion:
    """One criterion of the latest scored judge result."""

    criterion: str  # id
    source: str  # "judge" (LLM) or "heuristic"
    score: float | None  # label (median of the samples)
    mean: float | None  # soft score
    agreement: float | None  # fraction of samples equal to the label
    n_valid: int  # valid samples
    n_samples: int  # samples requested
    uncertain: bool  # any sample said the evidence is insufficient
    heuristic_score: float | None  # the motion heuristic's score
    routed: bool  # sent to human review
    reasons: tuple[tuple[str, str], ...]  # (code, detail) of each routing reason
    evidence_frames: tuple[str, ...]  # refs cited by the samples that agree with the label


@dataclass(frozen=True)
class JudgeResult:
    """The latest scored judge result of an episode made on the episode as it is now."""

    result_id: int  # episode_results.id
    run_id: str  # run that produced it
    tag: str  # the run's tag (usually the policy)
    scorer: str  # "llm" or "heuristic"
    model: str  # model id (or heuristic version)
    created_at: str  # UTC ISO 8601
    total: float | None  # sum of the labels
    routed: bool  # the episode is routed for review
    reasons: tuple[tuple[str, str, str], ...]  # (criterion or "", code, detail)
    motion_check: dict[str, Any]  # the heuristic motion check, as stored
    criteria: Mapping[str, JudgedCriterion]  # by criterion id


@dataclass(frozen=True)
class EpisodeSummary:
    """One row of the episodes page."""

    episode: EpisodeRecord  # dataset record (length, fps, videos)
    result: JudgeResult | None  # None: never scored
    failure: str | None  # reason of the latest failed judge attempt, when it has no scored result
    effective: Mapping[str, EffectiveScore]  # by criterion id
    in_audit: bool  # part of the random audit sample
    facts: EpisodeFacts  # what the recording says: duration, task, quality card (when its sidecar holds)
    stale_result: StaleResult | None = None  # newest result made on an earlier version of it, when none is current
    truth: TruthRecord | None = None  # virtual ground truth (virtual rig only): a reference beside the scores

    @property
    def index(self) -> int:
        """Episode index."""
        return self.episode.index

    @property
    def tag(self) -> str:
        """Tag of the judge run (policy), or ""."""
        return self.result.tag if self.result else ""

    def routed(self, criterion: str = "") -> bool:
        """Routed for review (on one criterion, or at all)."""
        if self.result is None:
            return False
        if not criterion:
            return self.result.routed
        judged = self.result.criteria.get(criterion)
        episode_wide = any(c == "" for c, _, _ in self.result.reasons)
        return episode_wide or (judged is not None and judged.routed)

    def uncertain(self, criterion: str = "") -> bool:
        """The judge said the evidence was insufficient (on one criterion, or on any)."""
        if self.result is None:
            return False
        return any(c.uncertain for c in self.result.criteria.values() if not criterion or c.criterion == criterion)

    @property
    def verdict(self) -> str:
        """The quality card's verdict, or "no card" (none kept, or one that belongs to another episode)."""
        return self.facts.quality.verdict if self.facts.quality else "no card"

    def review_status(self, criteria: Iterable[str]) -> str:
        """Review status: "reviewed" (every criterion has a human record), "partial" or "unreviewed"."""
        ids = list(criteria)
        done = sum(1 for c in ids if (e := self.effective.get(c)) is not None and e.overridden_by is not None)
        return "reviewed" if ids and done == len(ids) else ("partial" if done else "unreviewed")

    def judge_score(self, criterion: str) -> float | None:
        """The judge's label of a criterion."""
        judged = self.result.criteria.get(criterion) if self.result else None
        return judged.score if judged else None

    def effective_score(self, criterion: str) -> float | None:
        """The effective score of a criterion (override, else judge)."""
        e = self.effective.get(criterion)
        return e.effective if e else None

    def total(self, criteria: Iterable[str], effective: bool) -> float | None:
        """Sum over criteria (None when one is missing)."""
        values = [self.effective_score(c) if effective else self.judge_score(c) for c in criteria]
        return None if not values or any(v is None for v in values) else float(sum(values))  # type: ignore[misc]


@dataclass(frozen=True)
class StaleRecords:
    """What the pages leave out because it was made on another version of its episode (or a deleted one)."""

    results: tuple[StaleResult, ...]  # per episode without a current scored result: its newest one
    overrides: tuple[Override, ...]  # overrides that would be effective, made on another version

    def __bool__(self) -> bool:
        """Whether anything was left out."""
        return bool(self.results or self.overrides)


@dataclass
class ReviewCatalog:
    """Read model over one dataset and its store; thread-safe (the store serialises its queries)."""

    source: DatasetSource  # the opened dataset
    store: EvaluationStore  # the evaluation store
    audit: AuditConfig = field(default_factory=AuditConfig)  # the audit sample's size and seed

    @property
    def dataset_id(self) -> str:
        """The dataset's name in the store."""
        return self.source.dataset_id

    def criteria(self) -> tuple[CriterionInfo, ...]:
        """Criteria of the rubric of the latest run on this dataset, else of the built-in rubric."""
        rows = self.store.query(
            "SELECT rubric_json FROM runs WHERE dataset_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1",
            (self.dataset_id,),
        )
        raw = json.loads(rows[0]["rubric_json"]) if rows else load_rubric().to_dict()
        return tuple(
            CriterionInfo(
                id=str(c["id"]),
                name=str(c.get("name", "")),
                question=str(c.get("question", "")),
                levels=tuple((float(lv["score"]), str(lv.get("anchor", ""))) for lv in c.get("levels", [])),
            )
            for c in raw.get("criteria", [])
        )

    @cached_property
    def fingerprints(self) -> Mapping[int, str]:
        """Episode index -> fingerprint of the episode in the opened dataset (computed once)."""
        return episodes_now(self.source)

    @cached_property
    def facts(self) -> Mapping[int, EpisodeFacts]:
        """Episode index -> its own facts (the sidecars are read and checked once)."""
        return {ep.index: episode_facts(self.source, ep) for ep in self.source.episodes}

    def stale_sidecars(self) -> list[EpisodeFacts]:
        """Episodes whose sidecar in meta/so101/ describes another episode (the dataset was edited)."""
        return [f for f in self.facts.values() if f.sidecar.status == "stale"]

    def judged(self) -> bool:
        """Whether the store holds any current scored result for this dataset."""
        return bool(self._current().current)

    def summaries(self) -> list[EpisodeSummary]:
        """One summary per dataset episode, in index order."""
        results = self._results()
        failures = self._failures()
        effective = effective_scores(self.store, self.dataset_id, self.fingerprints)
        stale = {s.result.episode_index: s for s in self._current().stale}
        sample = audit_sample(self.dataset_id, sorted(results), self.audit)
        truth = current_truth(self.store, self.dataset_id, self.fingerprints)
        return [
            EpisodeSummary(
                episode=ep,
                result=results.get(ep.index),
                failure=None if ep.index in results else failures.get(ep.index),
                effective=effective.get(ep.index, {}),
                in_audit=ep.index in sample,
                facts=self.facts[ep.index],
                stale_result=stale.get(ep.index),
                truth=truth.get(ep.index),
            )
            for ep in self.source.episodes
        ]

    def stale(self) -> StaleRecords:
        """Judge results and overrides made on another version of their episode, left out of every page."""
        return StaleRecords(
            results=self._current().stale,
            overrides=tuple(stale_overrides(self.store, self.dataset_id, self.fingerprints)),
        )

    def select(self, flt: EpisodeFilter, summaries: list[EpisodeSummary] | None = None) -> list[EpisodeSummary]:
        """Summaries that pass a filter (of `summaries` when given, else read now)."""
        ids = [flt.criterion] if flt.criterion else [c.id for c in self.criteria()]
        out = []
        for s in self.summaries() if summaries is None else summaries:
            if flt.routed and not s.routed(flt.criterion):
                continue
            if flt.audit and not s.in_audit:
                continue
            if flt.tag and s.tag != flt.tag:
                continue
            if flt.status and s.review_status(ids) != flt.status:
                continue
            if flt.scored and (s.result is not None) != (flt.scored == "yes"):
                continue
            if not _quality_passes(flt, s):
                continue
            out.append(s)
        return out

    def tags(self) -> list[str]:
        """Run tags (policies) of this dataset's judge runs."""
        rows = self.store.query("SELECT DISTINCT tag FROM runs WHERE dataset_id = ? ORDER BY tag", (self.dataset_id,))
        return [r["tag"] for r in rows if r["tag"]]

    def _current(self) -> CurrentResults:
        """Scored results of this dataset split into the newest current one per episode and the stale ones."""
        rows = self.store.query(
            "SELECT id, episode_index, episode_fingerprint FROM episode_results WHERE dataset_id = ?"
            f" AND status = 'scored' AND {NOT_TRUTH}",
            (self.dataset_id,),
        )
        refs = [ResultRef(int(r["id"]), int(r["episode_index"]), r["episode_fingerprint"]) for r in rows]
        return select_current(refs, self.fingerprints)

    def _results(self) -> dict[int, JudgeResult]:
        chosen = {ref.result_id for ref in self._current().current.values()}
        rows = [
            r
            for r in self.store.query(
                "SELECT r.*, runs.tag, runs.scorer, runs.model FROM episode_results r"
                " JOIN runs ON runs.run_id = r.run_id WHERE r.dataset_id = ? AND r.status = 'scored'",
                (self.dataset_id,),
            )
            if int(r["id"]) in chosen
        ]
        scores: dict[int, dict[str, JudgedCriterion]] = {}
        for s in self.store.query(
            "SELECT s.* FROM episode_results r JOIN scores s ON s.result_id = r.id WHERE r.dataset_id = ?"
            " AND r.status = 'scored'",
            (self.dataset_id,),
        ):
            if int(s["result_id"]) not in chosen:
                continue
            scores.setdefault(int(s["result_id"]), {})[s["criterion"]] = JudgedCriterion(
                criterion=s["criterion"],
                source=s["source"],
                score=s["score"],
                mean=s["mean"],
                agreement=s["agreement"],
                n_valid=int(s["n_valid"]),
                n_samples=int(s["n_samples"]),
                uncertain=bool(s["uncertain"]),
                heuristic_score=s["heuristic_score"],
                routed=bool(s["routed"]),
                reasons=tuple((r.get("code", ""), r.get("detail", "")) for r in json.loads(s["route_reasons_json"])),
                evidence_frames=tuple(str(f) for f in json.loads(s["evidence_frames_json"])),
            )
        results = {}
        for r in rows:
            results[int(r["episode_index"])] = JudgeResult(
                result_id=int(r["id"]),
                run_id=r["run_id"],
                tag=r["tag"],
                scorer=r["scorer"],
                model=r["model"],
                created_at=r["created_at"],
                total=r["total"],
                routed=bool(r["routed"]),
                reasons=tuple(
                    (x.get("criterion", ""), x.get("code", ""), x.get("detail", ""))
                    for x in json.loads(r["route_reasons_json"])
                ),
                motion_check=json.loads(r["motion_check_json"] or "{}"),
                criteria=scores.get(int(r["id"]), {}),
            )
        return results

    def _failures(self) -> dict[int, str]:
        """The latest failed judge attempt per episode, on the episode as it is now."""
        rows = self.store.query(
            "SELECT episode_index, episode_fingerprint, failure_reason FROM episode_results WHERE dataset_id = ?"
            f" AND status = 'failed' AND {NOT_TRUTH} ORDER BY id",
            (self.dataset_id,),
        )
        now = self.fingerprints
        return {
            int(r["episode_index"]): r["failure_reason"] or "failed"
            for r in rows
            if now.get(int(r["episode_index"])) == r["episode_fingerprint"]
        }


def _quality_passes(flt: EpisodeFilter, summary: EpisodeSummary) -> bool:
    """Whether an episode passes the filter's quality conditions (without a card: only verdict "no card")."""
    quality = summary.facts.quality
    if flt.verdict and summary.verdict != flt.verdict:
        return False
    if flt.dropped and (quality is None or quality.dropped_frames == 0):
        return False
    idle = summary.facts.idle_percent
    return flt.min_idle_percent is None or (idle is not None and idle >= flt.min_idle_percent)


def audit_sample(dataset_id: str, judged: list[int], audit: AuditConfig) -> frozenset[int]:
    """The reproducible random audit sample among judged episodes (at least one when any is judged)."""
    if not judged:
        return frozenset()
    k = max(1, math.ceil(audit.fraction * len(judged)))

    def rank(index: int) -> str:
        return hashlib.sha256(f"{audit.seed}:{dataset_id}:{index}".encode()).hexdigest()

    return frozenset(sorted(judged, key=rank)[:k])
