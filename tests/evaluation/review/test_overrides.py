"""The override store: append-only rows beside untouched judge records, and effective scores."""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from evaluation.episode_source import open_dataset
from evaluation.errors import StoreError
from evaluation.judge.run import run_judge
from evaluation.overrides import REASON_CODES, REVIEW_SCHEMA_VERSION, OverrideError, OverrideStore, effective_scores
from evaluation.rubric import load_rubric
from evaluation.store import EvaluationStore
from evaluation.store_schema import SCHEMA_VERSION
from tests.evaluation.judge.judge_testkit import judge_config
from tests.support.judged_store import judge_tables

DATASET = "fold_virtual"


def test_an_override_wins_and_the_judge_record_is_untouched(judged_store: Path):
    before = judge_tables(judged_store)
    with EvaluationStore(judged_store) as store, OverrideStore(store) as overrides:
        assert effective_scores(store, DATASET)[0]["R3"].source == "judge"
        o = overrides.record(DATASET, 0, "R3", 1.0, "view_ambiguous", "push seen in right wrist", "ana", 0.5)
        assert (o.old_score, o.new_score, o.reviewer, o.supersedes) == (0.5, 1.0, "ana", None)
        assert o.judge_score_id is not None
        assert o.created_at.endswith("+00:00")
        scores = effective_scores(store, DATASET)
        r3 = scores[0]["R3"]
        assert (r3.judge, r3.override, r3.effective, r3.source) == (0.5, 1.0, 1.0, "override")
        assert r3.overridden_by == o
        assert (scores[0]["R1"].effective, scores[0]["R1"].source) == (1.0, "judge")
        assert overrides.history(DATASET) == [o]
        assert overrides.history(DATASET, episode_index=1) == []
        components = dict(store.query("SELECT component, version FROM schema_components"))
    assert components == {"judge": SCHEMA_VERSION, "review": REVIEW_SCHEMA_VERSION}
    assert judge_tables(judged_store) == before


def test_overrides_cannot_be_updated_or_deleted(judged_store: Path):
    with EvaluationStore(judged_store) as store, OverrideStore(store) as overrides:
        overrides.record(DATASET, 1, "R1", 0.5, "judge_missed_evidence", "", "ana", 0.0)
    raw = sqlite3.connect(judged_store)
    try:
        replace_first = (
            "INSERT OR REPLACE INTO overrides (override_id, created_at, dataset_id, episode_index, criterion,"
            " new_score, reason, note, reviewer) SELECT override_id, created_at, dataset_id, episode_index, criterion,"
            " 1.0, 'other', 'swapped', 'mallory' FROM overrides"
        )
        for sql in ("UPDATE overrides SET new_score = 0", "DELETE FROM overrides", replace_first):
            with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                raw.execute(sql)
        assert raw.execute("SELECT reviewer, new_score FROM overrides").fetchall() == [("ana", 0.5)]
    finally:
        raw.close()


def test_a_later_override_supersedes_and_both_stay_on_record(judged_store: Path):
    with EvaluationStore(judged_store) as store, OverrideStore(store) as overrides:
        first = overrides.record(DATASET, 2, "R3", 1.0, "judge_missed_evidence", "", "ana", 0.0)
        second = overrides.record(DATASET, 2, "R3", 0.5, "rubric_misapplied", "fold disturbed", "ben", 1.0)
        assert second.supersedes == first.override_id
        assert effective_scores(store, DATASET)[2]["R3"].overridden_by == second
        assert [o.override_id for o in overrides.history(DATASET, 2)] == [first.override_id, second.override_id]
        confirm = overrides.record(DATASET, 2, "R1", 0.5, "confirmed", "", "ana", 0.5)
        assert not confirm.changes_score
        assert second.changes_score


def test_concurrent_overrides_from_two_connections_are_both_recorded(judged_store: Path):
    n = 20
    barrier = threading.Barrier(2)
    with EvaluationStore(judged_store) as store:
        stores = [OverrideStore(store), OverrideStore(store)]  # two connections, like two servers

        def write(k: int) -> None:
            barrier.wait()
            for i in range(n):
                stores[k].record(DATASET, 4, "R3", (0.5, 1.0)[k], "judge_missed_evidence", f"{k}-{i}", f"r{k}", 0.0)

        threads = [threading.Thread(target=write, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        history = stores[0].history(DATASET, 4)
        assert sorted(o.note for o in history) == sorted(f"{k}-{i}" for k in range(2) for i in range(n))
        assert effective_scores(store, DATASET)[4]["R3"].overridden_by == history[-1]
        chain = [o.supersedes for o in history]
        assert chain == [None] + [o.override_id for o in history[:-1]]  # each saw exactly its predecessor
        for s in stores:
            s.close()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"new_score": 0.7}, "allowed: \\[0.0, 0.5, 1.0\\]"),
        ({"reason": "because"}, "reason='because'"),
        ({"reviewer": " "}, "reviewer name"),
        ({"reason": "other", "note": ""}, "needs a note"),
        ({"episode_index": -1}, "episode_index=-1"),
        ({"expected_old": 3.0}, "expected_old=3.0"),
    ],
)
def test_bad_overrides_are_refused_and_nothing_is_written(judged_store: Path, changes: dict, message: str):
    args = {
        "dataset_id": DATASET,
        "episode_index": 0,
        "criterion": "R3",
        "new_score": 1.0,
        "reason": REASON_CODES[0],
        "note": "",
        "reviewer": "ana",
        "expected_old": 0.5,
    } | changes
    with EvaluationStore(judged_store) as store, OverrideStore(store) as overrides:
        with pytest.raises(OverrideError, match=message):
            overrides.record(**args)
        assert overrides.history(DATASET) == []


def test_heuristic_runs_are_labelled_and_a_store_without_overrides_reads(dataset_root: Path, tmp_path: Path):
    path = tmp_path / "h.sqlite"
    config = judge_config(dataset_root, path)
    config = replace(config, scorer="heuristic", dataset=replace(config.dataset, episodes=(0, 1)))
    with EvaluationStore(path) as store:
        run_judge(open_dataset(dataset_root), load_rubric(), config, store, None)
        scores = effective_scores(store, DATASET)  # no overrides table yet
    assert sorted(scores) == [0, 1]
    assert {s.source for e in scores.values() for s in e.values() if s.judge is not None} == {"heuristic"}
    assert scores[1]["R1"].judge == 0.0


def test_a_newer_review_schema_is_refused(judged_store: Path):
    raw = sqlite3.connect(judged_store)
    raw.execute("INSERT INTO schema_components VALUES ('review', 99)")
    raw.commit()
    raw.close()
    with EvaluationStore(judged_store) as store, pytest.raises(StoreError, match="review schema version 99"):
        OverrideStore(store)
