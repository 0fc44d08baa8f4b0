import csv
import sqlite3
from contextlib import closing
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from evaluation.episode_score import CriterionScore, EpisodeScore, RouteReason
from evaluation.errors import StoreError
from evaluation.export import export_scores
from evaluation.store import (
    APPEND_ONLY_TABLES,
    SCHEMA_VERSION,
    BatchSubmission,
    CallRecord,
    EvaluationStore,
    RunRecord,
    default_store_path,
)
from tests.evaluation.store_v1 import V1_TABLES, write_v1_store


def _run(run_id: str = "r1", config_hash: str = "h1", dataset_id: str = "ds") -> RunRecord:
    return RunRecord(
        run_id,
        "llm",
        config_hash,
        {"judge": {"model": "m"}},
        "claude-sonnet-5-5",
        "p",
        "rub@1",
        {},
        dataset_id,
        f"/data/{dataset_id}",
        "rev",
        "smolvla",
        "sync",
        False,
        "2.14.0",
    )


def _submission(sid: str, run_id: str = "r1", dataset_id: str = "ds", episode: int = 0) -> BatchSubmission:
    requests = {f"ep{episode}-s0-first-{sid}": {"episode": episode, "sample": 0, "fingerprint": f"fp{episode}"}}
    return BatchSubmission(sid, run_id, "h1", dataset_id, f"/data/{dataset_id}", requests)


def _fill_every_table(s: EvaluationStore) -> None:
    """One row (at least) in every append-only table, written through the class (carried_episodes as carry.py does)."""
    s.start_run(_run())
    s.record_call(_call())
    s.record_episode("r1", "h1", "ds", 0, "fp0", _score(), {}, 5, 0.05)
    s.record_batch_submission(_submission("s1"))
    s.resolve_batch_submission("s1", "created", "b1")
    s.add_batch_event("b1", "collected")
    s.record_batch_submission(_submission("s2"))
    s.resolve_batch_submission("s2", "not_found")
    s.add_run_event("r1", "finished", {})
    with closing(sqlite3.connect(s.path)) as raw, raw:
        raw.execute(
            "INSERT INTO carried_episodes (at, dataset_id, episode_index, episode_fingerprint, source_root,"
            " source_dataset_id, source_episode, source_fingerprint, results, overrides)"
            " VALUES ('t', 'ds', 0, 'fp0', '/src', 'src', 3, 'fp3', 1, 0)"
        )


def _rows(path: Path, tables: tuple[str, ...] = APPEND_ONLY_TABLES) -> dict[str, list[tuple]]:
    raw = sqlite3.connect(path)
    try:
        return {t: raw.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in tables}
    finally:
        raw.close()


def _score(total_r3: float = 0.5) -> EpisodeScore:
    reason = RouteReason("low_agreement", "R3", "3/5 agree")
    crit = [
        CriterionScore("R1", "judge", 1.0, 1.0, 1.0, 5, 5, False, 1.0, ("overhead@1.00s",), ()),
        CriterionScore("R3", "judge", total_r3, 0.6, 0.6, 5, 5, False, 1.0, (), (reason,)),
    ]
    return EpisodeScore(tuple(crit), "scored", (reason,))


def _call(run_id: str = "r1") -> CallRecord:
    return CallRecord(
        run_id,
        0,
        "fp0",
        0,
        "first",
        "ep0-s0-first",
        "ok",
        [{"ref": "overhead@1.00s", "sha256": "ab"}],
        usage={"input_tokens": 10},
        cost_usd=0.01,
        raw_response="{}",
        parsed={"R1": {}},
    )


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
def test_every_table_is_append_only_at_the_database(tmp_path: Path, table: str):
    path = tmp_path / "eval.sqlite"
    with EvaluationStore(path) as s:
        _fill_every_table(s)
    before = _rows(path)
    assert before[table], f"{table} has no row to tamper with"
    raw = sqlite3.connect(path)  # a plain connection: recursive_triggers off, no help from the class
    columns = ", ".join(r[1] for r in raw.execute(f"PRAGMA table_info({table})"))
    for sql in (
        f"DELETE FROM {table}",
        f"UPDATE {table} SET rowid = rowid",
        f"INSERT OR REPLACE INTO {table} SELECT * FROM {table} LIMIT 1",
        f"REPLACE INTO {table} (rowid, {columns}) SELECT rowid, {columns} FROM {table} LIMIT 1",
        f"INSERT INTO {table} SELECT * FROM {table} LIMIT 1 ON CONFLICT DO UPDATE SET rowid = rowid",
    ):
        with pytest.raises(sqlite3.DatabaseError, match=f"^{table} is append-only"):
            raw.execute(sql)
    raw.commit()
    raw.close()
    assert _rows(path) == before


@pytest.mark.parametrize(("table", "id_column"), [("episode_results", "id"), ("scores", "id")])
def test_replace_on_a_unique_key_other_than_the_id_is_refused(tmp_path: Path, table: str, id_column: str):
    path = tmp_path / "eval.sqlite"
    with EvaluationStore(path) as s:
        _fill_every_table(s)
    before = _rows(path)
    raw = sqlite3.connect(path)
    columns = ", ".join(r[1] for r in raw.execute(f"PRAGMA table_info({table})") if r[1] != id_column)
    with pytest.raises(sqlite3.DatabaseError, match=f"^{table} is append-only"):  # a new id, the same (run, episode)
        raw.execute(f"INSERT OR REPLACE INTO {table} ({columns}) SELECT {columns} FROM {table} LIMIT 1")
    raw.close()
    assert _rows(path) == before


def test_a_failed_episode_write_leaves_no_partial_rows(store: EvaluationStore):
    store.start_run(_run())
    broken = EpisodeScore((CriterionScore("R1", "judge", 1.0, 1.0, 1.0, 1, 1, False, None, (), ()),) * 2, "scored", ())
    with pytest.raises(StoreError, match="scores is append-only"):  # the same criterion twice
        store.record_episode("r1", "h1", "ds", 0, "fp0", broken, {}, 1, 0.0)
    assert store.query("SELECT COUNT(*) FROM episode_results")[0][0] == 0
    assert store.query("SELECT COUNT(*) FROM scores")[0][0] == 0


def test_writing_a_recorded_key_again_through_the_class_is_a_store_error(store: EvaluationStore):
    _fill_every_table(store)
    with pytest.raises(StoreError, match="runs is append-only"):
        store.start_run(_run())
    with pytest.raises(StoreError, match="batch_submissions is append-only"):
        store.record_batch_submission(_submission("s1"))
    store.record_batch_submission(_submission("s3"))
    with pytest.raises(StoreError, match="batch_jobs is append-only"):  # b1 is tracked already
        store.resolve_batch_submission("s3", "adopted", "b1")
    assert [r[0] for r in store.query("SELECT submission_id FROM batch_submissions ORDER BY rowid")] == [
        "s1",
        "s2",
        "s3",
    ]
    assert store.query("SELECT COUNT(*) FROM batch_submission_events WHERE submission_id = 's3'")[0][0] == 0


@pytest.mark.parametrize(
    "sql",
    [
        "WITH x AS (SELECT 1) INSERT INTO run_events (run_id, at, event, detail_json) SELECT 'r1', 't', 'x', '{}'",
        "WITH x AS (SELECT 1) DELETE FROM schema_components",
        "WITH x AS (SELECT 1) UPDATE schema_components SET version = 99",
        "WITH x AS (SELECT 1) REPLACE INTO schema_components VALUES ('judge', 99)",
    ],
)
def test_query_cannot_write_whatever_it_starts_with(tmp_path: Path, sql: str):
    path = tmp_path / "eval.sqlite"
    with EvaluationStore(path) as s:
        _fill_every_table(s)
        before = _rows(path, (*APPEND_ONLY_TABLES, "schema_components"))
        with pytest.raises(StoreError, match="read-only"):
            s.query(sql)
        assert s.query("SELECT COUNT(*) FROM runs")[0][0] == 1  # reads still work afterwards
    assert _rows(path, (*APPEND_ONLY_TABLES, "schema_components")) == before


def test_an_in_memory_store_reads_its_writes_and_refuses_writes_through_query():
    with EvaluationStore(Path(":memory:")) as s:
        s.start_run(_run())
        assert s.query("SELECT run_id FROM runs")[0][0] == "r1"
        with pytest.raises(StoreError, match="read-only"):
            s.query("WITH x AS (SELECT 1) DELETE FROM schema_components")
    with EvaluationStore(Path(":memory:")) as other:
        assert other.query("SELECT COUNT(*) FROM runs")[0][0] == 0  # private to its store


def test_a_version_1_store_is_migrated_with_its_rows_kept(tmp_path: Path):
    path = tmp_path / "old.sqlite"
    write_v1_store(path)
    v1_rows = _rows(path, V1_TABLES)
    with EvaluationStore(path) as s:
        versions = dict(tuple(r) for r in s.query("SELECT component, version FROM schema_components"))
        assert versions == {"judge": SCHEMA_VERSION, "review": 1}  # another component's row is left alone
        assert s.scored_episodes("h1", "ds") == {(0, "fp0")}
        (job,) = s.open_batch_jobs("h1", "ds")  # the v1 job is scoped through its run
        assert (job.batch_id, job.dataset_id, job.dataset_root) == ("msgbatch_open", "ds", "/data/ds")
        assert job.requests == {"ep1-s0-first": {"episode": 1, "fingerprint": "fp1", "sample": 0}}
        assert s.open_batch_jobs("h1", "other") == []
        s.add_batch_event("msgbatch_open", "collected", {"note": "new column"})
        assert s.open_batch_jobs("h1", "ds") == []
    with EvaluationStore(path):
        pass  # a second open of the migrated file changes nothing
    after = _rows(path, V1_TABLES)
    for table, rows in v1_rows.items():
        kept = [row[: len(rows[0])] for row in after[table][: len(rows)]] if rows else []
        assert kept == rows, table  # every v1 row, every v1 column, unchanged
    assert len(after["batch_job_events"]) == len(v1_rows["batch_job_events"]) + 1
    raw = sqlite3.connect(path)
    with pytest.raises(sqlite3.DatabaseError, match=r"^runs is append-only"):
        raw.execute("INSERT OR REPLACE INTO runs SELECT * FROM runs")
    with pytest.raises(sqlite3.DatabaseError, match=r"^batch_jobs is append-only"):
        raw.execute("DELETE FROM batch_jobs")
    raw.close()


def test_batch_jobs_are_scoped_to_their_dataset_and_closed_by_collected_or_abandoned(store: EvaluationStore):
    store.start_run(_run("ra", dataset_id="a"))
    store.start_run(_run("rb", dataset_id="b"))
    for sid, run, ds in (("sa", "ra", "a"), ("sb", "rb", "b"), ("sa2", "ra", "a")):
        store.record_batch_submission(_submission(sid, run, ds))
    store.resolve_batch_submission("sa", "created", "batch_a")
    store.resolve_batch_submission("sb", "adopted", "batch_b")
    assert [j.batch_id for j in store.open_batch_jobs("h1", "a")] == ["batch_a"]
    assert [j.batch_id for j in store.open_batch_jobs("h1", "b")] == ["batch_b"]
    assert store.open_batch_jobs("other-config", "a") == []
    assert [s.submission_id for s in store.unresolved_batch_submissions("h1", "a")] == ["sa2"]
    assert store.unresolved_batch_submissions("h1", "b") == []
    store.add_batch_event("batch_a", "superseded", {"episode": 0})
    assert [j.batch_id for j in store.open_batch_jobs("h1", "a")] == ["batch_a"]  # not a closing event
    store.add_batch_event("batch_a", "abandoned")
    assert store.open_batch_jobs("h1", "a") == []
    assert store.tracked_batch_ids() == {"batch_a", "batch_b"}


def test_reopening_keeps_data_and_rejects_writes_through_query(tmp_path: Path):
    path = tmp_path / "eval.sqlite"
    with EvaluationStore(path) as s:
        s.start_run(_run())
    with EvaluationStore(path) as s:
        assert s.query("SELECT run_id, tag FROM runs")[0]["tag"] == "smolvla"
        with pytest.raises(StoreError, match="SELECT"):
            s.query("DROP TABLE runs")
        assert s.query("SELECT COUNT(*) FROM runs")[0][0] == 1


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
