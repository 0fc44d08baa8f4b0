import csv
import sqlite3
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from evaluation.aggregate import CriterionScore, EpisodeScore, RouteReason
from evaluation.errors import StoreError
from evaluation.export import export_scores
from evaluation.store import APPEND_ONLY_TABLES, CallRecord, EvaluationStore, RunRecord, default_store_path


def _run(run_id: str = "r1", config_hash: str = "h1") -> RunRecord:
    return RunRecord(run_id, "llm", config_hash, {"judge": {"model": "m"}}, "claude-sonnet-5-5", "p", "rub@1", {},
                     "ds", "/data/ds", "rev", "smolvla", "sync", False, "2.14.0")  # fmt: skip


def _score(total_r3: float = 0.5) -> EpisodeScore:
    reason = RouteReason("low_agreement", "R3", "3/5 agree")
    crit = [
        CriterionScore("R1", "judge", 1.0, 1.0, 1.0, 5, 5, False, 1.0, ("overhead@1.00s",), ()),
        CriterionScore("R3", "judge", total_r3, 0.6, 0.6, 5, 5, False, 1.0, (), (reason,)),
    ]
    return EpisodeScore(tuple(crit), "scored", (reason,))


def _call(run_id: str = "r1") -> CallRecord:
    return CallRecord(run_id, 0, "fp0", 0, "first", "ep0-s0-first", "ok", [{"ref": "overhead@1.00s", "sha256": "ab"}],
                      usage={"input_tokens": 10}, cost_usd=0.01, raw_response="{}", parsed={"R1": {}})  # fmt: skip


@pytest.fixture
def store(tmp_path: Path):
    with EvaluationStore(tmp_path / "eval.sqlite") as s:
        yield s


def test_records_round_trip_and_skip_set(store: EvaluationStore):
    store.start_run(_run())
    store.record_call(_call())
    store.record_episode("r1", "h1", "ds", 0, "fp0", _score(), {"did_nothing": False}, calls=5, cost_usd=0.05)
    store.record_episode("r1", "h1", "ds", 1, "fp1", EpisodeScore((), "failed", ()), {}, 0, None, "overloaded")
    assert store.scored_episodes("h1", "ds") == {(0, "fp0")}  # failed episodes are judged again next time
    assert store.scored_episodes("other", "ds") == set()
    row = store.query("SELECT total, routed, samples_valid FROM episode_results WHERE episode_index = 0")[0]
    assert (row["total"], row["routed"], row["samples_valid"]) == (1.5, 1, 5)
    scores = store.query("SELECT criterion, score, agreement, routed FROM scores ORDER BY criterion")
    assert [tuple(r) for r in scores] == [("R1", 1.0, 1.0, 0), ("R3", 0.5, 0.6, 1)]
    assert store.query("SELECT * FROM latest_episode_results")[0]["episode_index"] == 0


@pytest.mark.parametrize("table", APPEND_ONLY_TABLES)
def test_every_table_is_append_only(tmp_path: Path, table: str):
    path = tmp_path / "eval.sqlite"
    with EvaluationStore(path) as s:
        s.start_run(_run())
        s.record_call(_call())
        s.record_episode("r1", "h1", "ds", 0, "fp0", _score(), {}, 5, 0.05)
        s.record_batch_job("b1", "r1", "h1", {"ep0-s0-first": {"episode": 0}})
        s.add_batch_event("b1", "collected")
        s.add_run_event("r1", "finished", {})
    raw = sqlite3.connect(path)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        raw.execute(f"DELETE FROM {table}")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        raw.execute(f"UPDATE {table} SET rowid = rowid")
    raw.close()


def test_a_failed_episode_write_leaves_no_partial_rows(store: EvaluationStore):
    store.start_run(_run())
    broken = EpisodeScore((CriterionScore("R1", "judge", 1.0, 1.0, 1.0, 1, 1, False, None, (), ()),) * 2, "scored", ())
    with pytest.raises(sqlite3.IntegrityError):  # the same criterion twice violates UNIQUE
        store.record_episode("r1", "h1", "ds", 0, "fp0", broken, {}, 1, 0.0)
    assert store.query("SELECT COUNT(*) FROM episode_results")[0][0] == 0
    assert store.query("SELECT COUNT(*) FROM scores")[0][0] == 0


def test_reopening_keeps_data_and_rejects_writes_through_query(tmp_path: Path):
    path = tmp_path / "eval.sqlite"
    with EvaluationStore(path) as s:
        s.start_run(_run())
    with EvaluationStore(path) as s:
        assert s.query("SELECT run_id, tag FROM runs")[0]["tag"] == "smolvla"
        with pytest.raises(StoreError, match="SELECT"):
            s.query("DROP TABLE runs")


def test_newer_schema_is_refused(tmp_path: Path):
    path = tmp_path / "eval.sqlite"
    raw = sqlite3.connect(path)
    raw.execute("CREATE TABLE schema_components (component TEXT PRIMARY KEY, version INTEGER NOT NULL)")
    raw.execute("INSERT INTO schema_components VALUES ('judge', 99), ('review', 7)")
    raw.commit()
    raw.close()
    with pytest.raises(StoreError, match="judge schema version 99"):
        EvaluationStore(path)


def test_export_csv_and_parquet(store: EvaluationStore, tmp_path: Path):
    store.start_run(_run())
    store.record_episode("r1", "h1", "ds", 0, "fp0", _score(), {}, 5, 0.05)
    assert export_scores(store, tmp_path / "out.csv") == 2
    rows = list(csv.DictReader((tmp_path / "out.csv").open()))
    assert [(r["criterion"], float(r["score"]), r["tag"]) for r in rows] == [
        ("R1", 1.0, "smolvla"),
        ("R3", 0.5, "smolvla"),
    ]
    assert export_scores(store, tmp_path / "out.parquet") == 2
    table = pq.read_table(tmp_path / "out.parquet")
    assert table.column("model").to_pylist() == ["claude-sonnet-5-5"] * 2
    assert table.column("total").to_pylist() == [1.5, 1.5]


def test_export_of_an_empty_store_has_the_columns(store: EvaluationStore, tmp_path: Path):
    assert export_scores(store, tmp_path / "empty.csv") == 0
    header = (tmp_path / "empty.csv").read_text().splitlines()[0]
    assert '"criterion"' in header
    assert '"score"' in header


def test_store_lives_beside_the_dataset():
    assert default_store_path(Path("/data/fold_act")) == Path("/data/fold_act.evaluation.sqlite")
