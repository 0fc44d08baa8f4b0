"""Virtual ground truth: the rubric's scores computed from the simulated cloth, as a card carries them and as stored.

An episode recorded on the virtual rig carries them in its quality card (teleop/dataset/sidecar.py):

    "truth": {"definition": "cloth_truth@1", "scores": {"R1": 0.97, "R2": 0.91, "R3": 1.0},
              "facts": {...}, "seed": 1234, "cloth": {"x_m": ..., "y_m": ..., "yaw_deg": ..., "size_m": ...}}

A trimmed episode's card also has "trimmed_from": its truth then describes the whole recording.

    quality card --card_truth--> CardTruth --so101-judge --scorer=truth--> store: run of scorer "truth"
    store --current_truth--> TruthRecord per episode (made on the episode as it is now) --> report, review

Stored, each criterion keeps its continuous value (0..1): truth is not a judge's label, so it is not
snapped to the rubric's 0 / 0.5 / 1 (the report snaps it only where a measure needs levels: report/truth.py).
The card's truth as saved (facts, seed, cloth, trimmed_from) is kept in the result's
`motion_check_json`, the column that holds what stands behind a scorer's scores. Truth is a reference,
never a scorer's record: a person cannot override it and it is never an effective score, so every
reader of the scorers' results leaves runs of scorer "truth" out (`NOT_TRUTH`) and reads truth here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evaluation.currency import ResultRef, select_current
from evaluation.errors import TruthError
from evaluation.store import EvaluationStore
from evaluation.vocabulary import ScoreSource

TRUTH_SCORER = ScoreSource.TRUTH.value  # runs.scorer of stored truth
CARD_KEY = "truth"  # where a quality card keeps it
# Definitions whose scores this code knows to mean the rubric's criteria (robot/cameras/virtual/cloth_truth.py)
KNOWN_DEFINITIONS = ("cloth_truth@1", "cloth_truth@2")
# SQL condition on a row's run_id: the run is a scorer's (LLM judge or heuristic), not stored truth.
NOT_TRUTH = f"run_id NOT IN (SELECT run_id FROM runs WHERE scorer = '{TRUTH_SCORER}')"


@dataclass(frozen=True)
class CardTruth:
    """The truth one quality card carries."""

    definition: str  # e.g. "cloth_truth@1"
    scores: Mapping[str, float]  # criterion id -> 0..1, continuous
    seed: int | None  # the episode's cloth seed
    whole_recording: bool  # the episode was trimmed after recording: the truth describes the whole recording
    saved: Mapping[str, Any]  # the card's truth as saved, with "trimmed_from" when trimmed (what the store keeps)


@dataclass(frozen=True)
class TruthRecord:
    """The stored truth of one episode."""

    episode_index: int  # episode
    definition: str  # e.g. "cloth_truth@1"
    scores: Mapping[str, float | None]  # criterion id -> 0..1, continuous
    seed: int | None  # the episode's cloth seed
    whole_recording: bool  # the episode was trimmed: the truth describes the whole recording


def card_truth(card: Mapping[str, Any]) -> CardTruth | None:
    """The truth a quality card carries; None when it carries none (it was not recorded on the virtual rig).

    Raises:
        TruthError: The definition is not one of KNOWN_DEFINITIONS, or a score is not a number in 0..1
            (the message says what, not where: the caller names the episode).
    """
    raw = card.get(CARD_KEY)
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise TruthError(f"its quality card's {CARD_KEY!r} is {type(raw).__name__}, not an object")
    definition = str(raw.get("definition", ""))
    if definition not in KNOWN_DEFINITIONS:
        raise TruthError(f"its truth definition {definition!r} is unknown to this code (it knows {KNOWN_DEFINITIONS})")
    scores = raw.get("scores")
    if not isinstance(scores, Mapping) or not scores:
        raise TruthError(f"its truth ({definition}) has no scores")
    for criterion, value in scores.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
            raise TruthError(f"its truth ({definition}) scores {criterion}={value!r}: not a number in 0..1")
    seed = raw.get("seed")
    saved = dict(raw) | ({"trimmed_from": card["trimmed_from"]} if "trimmed_from" in card else {})
    return CardTruth(
        definition=definition,
        scores={str(c): float(v) for c, v in scores.items()},
        seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
        whole_recording="trimmed_from" in card,
        saved=saved,
    )


def current_truth(store: EvaluationStore, dataset_id: str, now: Mapping[int, str]) -> dict[int, TruthRecord]:
    """Per episode, the newest stored truth made on the episode as it is now (`now`: index -> fingerprint)."""
    rows = store.query(
        "SELECT e.id, e.episode_index, e.episode_fingerprint, e.motion_check_json FROM episode_results e"
        " JOIN runs r ON r.run_id = e.run_id WHERE r.scorer = ? AND e.dataset_id = ? AND e.status = 'scored'",
        (TRUTH_SCORER, dataset_id),
    )
    refs = [ResultRef(int(r["id"]), int(r["episode_index"]), r["episode_fingerprint"]) for r in rows]
    chosen = {ref.result_id: ref.episode_index for ref in select_current(refs, now).current.values()}
    if not chosen:
        return {}
    marks = ",".join("?" * len(chosen))
    scores: dict[int, dict[str, float | None]] = {}
    for s in store.query(f"SELECT result_id, criterion, score FROM scores WHERE result_id IN ({marks})", (*chosen,)):
        scores.setdefault(int(s["result_id"]), {})[s["criterion"]] = s["score"]
    out = {}
    for r in rows:
        if int(r["id"]) in chosen:
            saved = json.loads(r["motion_check_json"] or "{}")
            seed = saved.get("seed")
            out[int(r["episode_index"])] = TruthRecord(
                episode_index=int(r["episode_index"]),
                definition=str(saved.get("definition", "")),
                scores=scores.get(int(r["id"]), {}),
                seed=seed if isinstance(seed, int) else None,
                whole_recording="trimmed_from" in saved,
            )
    return out
