"""Judging five virtual-rig episodes end to end: the real SDK, the loopback API, real SQLite."""

import json
import shutil
import sqlite3
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from evaluation.episode_source import open_dataset
from evaluation.errors import RunAbortedError
from evaluation.judge.anthropic_client import RetryPolicy
from evaluation.judge.client import JudgeReply, JudgeRequest
from evaluation.judge.run import run_judge
from evaluation.rubric import load_rubric
from evaluation.store import APPEND_ONLY_TABLES, EvaluationStore
from evaluation.testing.fake_api_script import Delay, HttpError, Malformed, Refusal, Reply, SchemaBreak
from tests.evaluation.judge.judge_testkit import SHORT_TIMEOUT_S, judge_client, judge_config

RUBRIC = load_rubric()


def _r(r1: float, r2: float, r3: float, uncertain: tuple[str, ...] = ()) -> Reply:
    return Reply(scores=(("R1", r1), ("R2", r2), ("R3", r3)), uncertain=uncertain)


def _snapshot(path: Path) -> dict[str, list[tuple]]:
    raw = sqlite3.connect(path)
    try:
        return {t: raw.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in APPEND_ONLY_TABLES}
    finally:
        raw.close()


def _scores(store: EvaluationStore, run_id: str) -> dict[tuple[int, str], sqlite3.Row]:
    rows = store.query("SELECT * FROM scores WHERE run_id = ?", (run_id,))
    return {(r["episode_index"], r["criterion"]): r for r in rows}


def test_five_episodes_are_scored_with_correct_aggregation(dataset_root: Path, tmp_path: Path, server):
    server.script(_r(1, 1, 0.5), _r(1, 1, 1), _r(1, 1, 0.5), episode=0)  # R3 2/3 agree: routed
    server.script(_r(1, 0, 0), _r(1, 0, 0), _r(1, 0, 0), episode=1)  # idle episode, but R1 = 1: routed
    server.script(_r(0.5, 0.5, 0), _r(0.5, 0.5, 0), _r(0.5, 0.5, 0), episode=2)  # consistent: not routed
    server.script(_r(1, 1, 0), _r(1, 1, 0, uncertain=("R3",)), _r(1, 1, 0), episode=3)  # judge unsure on R3
    server.script(_r(0, 1, 1), _r(0, 0, 1), _r(0, 1, 1), episode=4)  # grasped and carried, judged R1 = 0
    store_path = tmp_path / "eval.sqlite"
    config = judge_config(dataset_root, store_path, samples=3, concurrency=3, tag="smolvla")
    with EvaluationStore(store_path) as store:
        summary = run_judge(open_dataset(dataset_root), RUBRIC, config, store, judge_client(server))
        assert server.problems() == []
        assert (summary.scored, summary.failed, summary.calls) == (5, 0, 15)
        assert summary.routed == 4
        scores = _scores(store, summary.run_id)
        r3 = scores[(0, "R3")]
        assert (r3["score"], r3["mean"], r3["agreement"], r3["routed"]) == (
            0.5,
            pytest.approx(2 / 3),
            pytest.approx(2 / 3),
            1,
        )
        assert json.loads(r3["route_reasons_json"])[0]["code"] == "low_agreement"
        assert {c["code"] for c in json.loads(scores[(1, "R1")]["route_reasons_json"])} == {
            "heuristic_conflict",
            "did_nothing",
        }
        assert not any(scores[(2, c)]["routed"] for c in RUBRIC.criterion_ids)
        r2 = scores[(4, "R2")]
        assert (r2["score"], r2["mean"], r2["n_valid"]) == (1.0, pytest.approx(2 / 3), 3)
        assert scores[(3, "R3")]["uncertain"] == 1
        assert scores[(3, "R3")]["score"] == 0.0
        assert json.loads(scores[(4, "R1")]["route_reasons_json"])[0]["detail"] == "judge 0, motion heuristic 1"
        assert json.loads(scores[(0, "R1")]["evidence_frames_json"])  # cited frames, for the review page
        totals = {r["episode_index"]: r["total"] for r in store.query("SELECT * FROM episode_results")}
        assert totals == {0: 2.5, 1: 1.0, 2: 1.0, 3: 2.0, 4: 2.0}
        run = store.query("SELECT * FROM runs")[0]
        assert run["model"] == "claude-sonnet-5-5"
        assert run["rubric_version"] == RUBRIC.version
        assert run["dataset_revision"]
        assert len(run["prompt_hash"]) == 16
        assert run["tag"] == "smolvla"
        calls = store.query("SELECT * FROM calls WHERE run_id = ?", (summary.run_id,))
        assert len(calls) == 15
        assert all(c["status"] == "ok" and c["request_id"] for c in calls)
        manifest = json.loads(calls[0]["frame_manifest_json"])
        assert all(len(m["sha256"]) == 64 and m["video_path"].endswith(".mp4") for m in manifest)
        assert sum(c["cost_usd"] for c in calls) == pytest.approx(summary.cost_usd)
        assert store.query("SELECT event FROM run_events")[0]["event"] == "finished"


def test_second_run_makes_no_calls_and_a_forced_run_leaves_old_records_untouched(dataset_root, tmp_path, server):
    store_path = tmp_path / "eval.sqlite"
    config = judge_config(dataset_root, store_path, samples=1)
    source = open_dataset(dataset_root)
    with EvaluationStore(store_path) as store:
        first = run_judge(source, RUBRIC, config, store, judge_client(server))
    assert first.scored == 5
    assert len(server.message_requests()) == 5
    before = _snapshot(store_path)
    with EvaluationStore(store_path) as store:
        second = run_judge(source, RUBRIC, config, store, judge_client(server))
    assert second.run_id is None
    assert second.skipped == 5
    assert second.calls == 0
    assert len(server.message_requests()) == 5  # zero API calls
    assert _snapshot(store_path) == before
    with EvaluationStore(store_path) as store:
        forced = run_judge(
            source, RUBRIC, replace(config, run=replace(config.run, force=True)), store, judge_client(server)
        )
        assert forced.run_id != first.run_id
        assert forced.scored == 5
        assert len(store.query("SELECT run_id FROM runs")) == 2
    after = _snapshot(store_path)
    for table, rows in before.items():
        assert after[table][: len(rows)] == rows  # old records unchanged, new ones appended
    assert len(after["calls"]) == 10


def test_every_server_fault_is_handled_while_the_batch_goes_on(dataset_root, tmp_path, server):
    server.script(*[HttpError(529, "overloaded_error")] * 2, episode=0)  # out of attempts: failed
    server.script(HttpError(429, "rate_limit_error", retry_after_s=0.01), episode=1)  # retried: scored
    server.script(Delay(SHORT_TIMEOUT_S + 1.0), Delay(SHORT_TIMEOUT_S + 1.0), episode=2)  # timeouts: failed
    server.script(Malformed(), SchemaBreak(), episode=3)  # asked again once, still bad: flagged
    server.script(Refusal(), episode=4)
    store_path = tmp_path / "eval.sqlite"
    config = judge_config(dataset_root, store_path, samples=1, concurrency=5)
    client = judge_client(
        server, RetryPolicy(max_attempts=2, initial_backoff_s=0.01, max_backoff_s=0.05), timeout_s=SHORT_TIMEOUT_S
    )
    source = open_dataset(dataset_root)
    with EvaluationStore(store_path) as store:
        summary = run_judge(source, RUBRIC, config, store, client)
        assert (summary.scored, summary.failed) == (1, 4)
        assert not summary.interrupted
        rows = store.query("SELECT * FROM episode_results")
        results = {r["episode_index"]: (r["status"], r["failure_reason"]) for r in rows}
        assert [r["total"] is None for r in rows] == [r["status"] == "failed" for r in rows]
        assert results == {
            0: ("failed", "overloaded"),
            1: ("scored", None),
            2: ("failed", "timeout"),
            3: ("failed", "invalid_output"),
            4: ("failed", "refusal"),
        }
        flagged = store.query("SELECT kind, status, validation_errors_json FROM calls WHERE episode_index = 3")
        assert [(c["kind"], c["status"]) for c in flagged] == [("first", "invalid"), ("reask", "invalid")]
        # Calls that failed for good keep the reasons of the attempts retried before the last one.
        failed = store.query("SELECT episode_index, attempts, retry_reasons_json FROM calls WHERE status = 'failed'")
        reasons = {c["episode_index"]: (c["attempts"], json.loads(c["retry_reasons_json"])) for c in failed}
        assert reasons[0] == (2, ["overloaded"])
        assert reasons[2] == (2, ["timeout"])
        # 6 judge calls (episode 3 asked again) sent 9 requests: each of episodes 0-2 retried once.
        assert (summary.calls, summary.requests, summary.retries) == (6, 9, 3)
        assert summary.requests == len(server.message_requests())
        # Failed episodes are judged again by the next (unforced) run; the scored one is skipped.
        again = run_judge(source, RUBRIC, config, store, client)
        assert (again.skipped, again.scored, again.calls) == (1, 4, 4)
    assert server.problems() == []


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        (HttpError(401, "authentication_error", message="invalid x-api-key"), "rejected the key"),
        (HttpError(429, "rate_limit_error", error_code="enforced_spend_limit_reached"), "spend limit"),
        (HttpError(404, "not_found_error", message="model: claude-sonnet-4-20250514"), "check judge.model"),
        (HttpError(403, "permission_error", message="no access to this model"), "the key lacks access"),
    ],
)
def test_errors_no_retry_can_fix_stop_the_run(dataset_root, tmp_path, server, fault, message):
    server.script(*[fault] * 10)
    store_path = tmp_path / "eval.sqlite"
    with EvaluationStore(store_path) as store:
        with pytest.raises(RunAbortedError, match=message):
            run_judge(
                open_dataset(dataset_root),
                RUBRIC,
                judge_config(dataset_root, store_path, concurrency=1),
                store,
                judge_client(server),
            )
        assert store.query("SELECT event FROM run_events")[0]["event"] == "failed"
        assert store.query("SELECT COUNT(*) FROM episode_results")[0][0] == 0
    assert len(server.message_requests()) == 1  # not one request per episode and sample


def test_a_403_says_what_a_403_means_not_that_the_key_was_rejected(dataset_root, tmp_path, server):
    messages = {}
    for status, kind in ((401, "authentication_error"), (403, "permission_error")):
        server.script(HttpError(status, kind, message=f"scripted {status}"))
        store_path = tmp_path / f"{status}.sqlite"
        with EvaluationStore(store_path) as store, pytest.raises(RunAbortedError) as info:
            run_judge(
                open_dataset(dataset_root),
                RUBRIC,
                judge_config(dataset_root, store_path, concurrency=1),
                store,
                judge_client(server),
            )
        messages[status] = str(info.value)
    assert "rejected the key" in messages[401]
    assert "$ANTHROPIC_API_KEY" in messages[401]
    assert "rejected the key" not in messages[403]
    assert "accepted the key" in messages[403]
    assert "judge.model='claude-sonnet-5-5'" in messages[403]
    assert "Console" in messages[403]
    assert "scripted 403" in messages[403]


def test_a_reply_cut_off_at_max_tokens_is_asked_again_with_twice_the_budget(dataset_root, tmp_path, server):
    cut = Reply(text='{"R1": {"observ', stop_reason="max_tokens")
    server.script(cut, Reply(), episode=0)  # cut off, then a full reply to the re-ask
    server.script(Malformed(), Reply(), episode=1)  # unusable but not cut off: the budget stays
    server.script(cut, cut, episode=2)  # cut off twice: flagged, asked again once only
    store_path = tmp_path / "eval.sqlite"
    config = judge_config(dataset_root, store_path, samples=1, concurrency=1)
    config = replace(
        config,
        judge=replace(config.judge, max_tokens=8000, reask_max_tokens_cap=12000),
        dataset=replace(config.dataset, episodes=(0, 1, 2)),
    )
    with EvaluationStore(store_path) as store:
        summary = run_judge(open_dataset(dataset_root), RUBRIC, config, store, judge_client(server))
        results = {r["episode_index"]: r["status"] for r in store.query("SELECT * FROM episode_results")}
    assert results == {0: "scored", 1: "scored", 2: "failed"}
    budgets = {ep: [r.body["max_tokens"] for r in server.message_requests(ep)] for ep in (0, 1, 2)}
    assert budgets == {0: [8000, 12000], 1: [8000, 8000], 2: [8000, 12000]}  # 2 x 8000 capped at 12000
    config = replace(
        config,
        judge=replace(config.judge, reask_max_tokens_cap=32000),
        run=replace(config.run, force=True),
        dataset=replace(config.dataset, episodes=(0,)),
    )
    server.script(cut, Reply(), episode=0)
    with EvaluationStore(store_path) as store:
        run_judge(open_dataset(dataset_root), RUBRIC, config, store, judge_client(server))
    assert [r.body["max_tokens"] for r in server.message_requests(0)][2:] == [8000, 16000]  # doubled
    assert summary.calls == 6
    assert server.problems() == []


class _StopAfter:
    """A judge client that asks the run to stop after `n` calls (like Ctrl-C mid-batch)."""

    def __init__(self, inner, n: int, stop: threading.Event) -> None:
        self.inner, self.n, self.stop, self.calls = inner, n, stop, 0

    def complete(self, request: JudgeRequest) -> JudgeReply:
        reply = self.inner.complete(request)
        self.calls += 1
        if self.calls >= self.n:
            self.stop.set()
        return reply


def test_an_interrupted_run_leaves_the_store_consistent_and_resumes(dataset_root, tmp_path, server):
    store_path = tmp_path / "eval.sqlite"
    config = judge_config(dataset_root, store_path, samples=2, concurrency=1)
    source = open_dataset(dataset_root)
    stop = threading.Event()
    with EvaluationStore(store_path) as store:
        summary = run_judge(source, RUBRIC, config, store, _StopAfter(judge_client(server), 5, stop), stop=stop)
        assert summary.interrupted
        assert summary.scored == 2
        assert store.query("SELECT event FROM run_events")[0]["event"] == "interrupted"
        scored = store.query("SELECT episode_index FROM episode_results")
        assert len(scored) == 2
        unfinished = store.query(
            "SELECT COUNT(*) FROM calls WHERE run_id = ? AND episode_index NOT IN (SELECT episode_index FROM"
            " episode_results)",
            (summary.run_id,),
        )[0][0]
        assert unfinished == 1  # the call made before the stop stays on record (it was paid for)
        for (index,) in scored:
            assert len(store.query("SELECT * FROM scores WHERE episode_index = ?", (index,))) == 3
        resumed = run_judge(source, RUBRIC, config, store, judge_client(server))
        assert (resumed.skipped, resumed.scored) == (2, 3)
        final = store.query("SELECT episode_index, COUNT(*) n FROM episode_results GROUP BY episode_index")
        assert {r["episode_index"]: r["n"] for r in final} == {i: 1 for i in range(5)}
    raw = sqlite3.connect(store_path)
    assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    raw.close()


def test_heuristic_scorer_runs_offline_and_is_labelled(dataset_root, tmp_path):
    store_path = tmp_path / "eval.sqlite"
    config = replace(judge_config(dataset_root, store_path), scorer="heuristic")
    with EvaluationStore(store_path) as store:
        summary = run_judge(open_dataset(dataset_root), RUBRIC, config, store, client=None)
        assert summary.scored == 5
        assert summary.calls == 0
        run = store.query("SELECT model, scorer, mode FROM runs")[0]
        assert tuple(run) == ("heuristic:motion-v2", "heuristic", "offline")
        rows = store.query(
            "SELECT episode_index, criterion, score, source FROM scores ORDER BY episode_index, criterion"
        )
        assert {r["source"] for r in rows} == {"heuristic"}
        by_episode = {}
        for r in rows:
            by_episode.setdefault(r["episode_index"], []).append(r["score"])
        # the cloth's final state (R2, R3) is unknown to the heuristic unless the motion rules it out: None, routed
        assert by_episode == {
            0: [1.0, None, None],
            1: [0.0, 0.0, 0.0],
            2: [0.5, None, 0.0],
            3: [1.0, None, 0.0],
            4: [1.0, None, None],
        }


def test_message_batches_mode_scores_everything_at_half_price(dataset_root, tmp_path, server):
    server.script(HttpError(500, "api_error"), episode=2)  # one errored entry in the batch
    store_path = tmp_path / "eval.sqlite"
    config = judge_config(dataset_root, store_path, samples=2, use_message_batches=True, batch_poll_interval_s=0.01)
    with EvaluationStore(store_path) as store:
        summary = run_judge(open_dataset(dataset_root), RUBRIC, config, store, judge_client(server))
        assert summary.scored == 5
        assert server.message_requests() == []
        calls = store.query("SELECT * FROM calls")
        assert len(calls) == 10
        assert len({c["batch_id"] for c in calls}) == 1
        errored = [c for c in calls if c["status"] == "failed"]
        assert [(c["episode_index"], c["failure_reason"]) for c in errored] == [(2, "batch_errored")]
        ok = next(c for c in calls if c["status"] == "ok")
        usage = json.loads(ok["usage_json"])
        full_price = (
            usage["input_tokens"] * 2
            + usage["cache_creation_input_tokens"] * 2.5
            + usage["cache_read_input_tokens"] * 0.2
            + usage["output_tokens"] * 10
        ) / 1e6
        assert ok["cost_usd"] == pytest.approx(full_price / 2)
        assert store.query("SELECT mode FROM runs")[0]["mode"] == "batches"
    assert server.problems() == []


def test_a_batch_submitted_before_a_restart_is_collected_not_paid_twice(dataset_root, tmp_path, server):
    store_path = tmp_path / "eval.sqlite"
    config = judge_config(
        dataset_root, store_path, samples=1, use_message_batches=True, batch_poll_interval_s=0.01, batch_max_wait_s=0.05
    )
    server.batch_polls_before_end = 10_000  # the batch is still processing when we give up waiting
    source = open_dataset(dataset_root)
    with EvaluationStore(store_path) as store:
        first = run_judge(source, RUBRIC, config, store, judge_client(server))
        assert first.interrupted
        assert first.scored == 0
        assert len(store.open_batch_jobs(first.config_hash)) == 1
        server.batch_polls_before_end = 0
        second = run_judge(source, RUBRIC, config, store, judge_client(server))
        assert second.scored == 5
        assert not second.interrupted
        assert store.open_batch_jobs(first.config_hash) == []
    creates = [r for r in server.requests if r.method == "POST" and r.path == "/v1/messages/batches"]
    assert len(creates) == 1


def test_an_undecodable_video_fails_its_episodes_and_the_others_are_judged(dataset_root, tmp_path, server):
    root = tmp_path / "broken"
    shutil.copytree(dataset_root, root)
    video = next((root / "videos" / "observation.images.overhead").rglob("*.mp4"))
    data = video.read_bytes()
    video.write_bytes(data[: int(len(data) * 0.55)])  # the last episodes' frames are gone
    store_path = tmp_path / "eval.sqlite"
    with EvaluationStore(store_path) as store:
        summary = run_judge(
            open_dataset(root), RUBRIC, judge_config(root, store_path, samples=1), store, judge_client(server)
        )
        results = {r["episode_index"]: r for r in store.query("SELECT * FROM episode_results")}
    assert summary.failed >= 1
    assert summary.scored >= 1
    assert summary.scored + summary.failed == 5
    failed = [r for r in results.values() if r["status"] == "failed"]
    assert all("FrameDecodeError" in r["failure_reason"] for r in failed)
    assert max(i for i, r in results.items() if r["status"] == "scored") < min(r["episode_index"] for r in failed)
