"""Message Batches: jobs belong to one dataset, changed episodes are judged again, a create is made once,
expired and canceled items are submitted once more. The real SDK, the loopback API, real SQLite."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from evaluation.episode_source import open_dataset
from evaluation.errors import JudgeCallError
from evaluation.judge.anthropic_client import AnthropicJudgeClient, RetryPolicy, make_sdk_client
from evaluation.judge.breaker import OverloadBreaker
from evaluation.judge.run import run_judge
from evaluation.judge.run_context import EpisodeOutcome, NullProgress
from evaluation.rubric import load_rubric
from evaluation.store import EvaluationStore
from evaluation.testing.fake_api_script import HttpError, Malformed, Reply
from evaluation.testing.fake_batches import CreateFault, ItemOutcome
from evaluation.testing.fake_messages_server import FakeMessagesServer
from tests.evaluation.judge.judge_testkit import (
    FAST_RETRY,
    SHORT_TIMEOUT_S,
    copy_dataset,
    judge_client,
    judge_config,
    nudge_episode_state,
)

RUBRIC = load_rubric()
NEVER_ENDS = 10_000  # status polls before a batch ends: longer than any run here waits


def _config(root: Path, store: Path, samples: int = 1, **run: object):
    return judge_config(
        root, store, samples=samples, use_message_batches=True, batch_poll_interval_s=0.01, batch_max_wait_s=0.2, **run
    )


def _paid(server: FakeMessagesServer) -> tuple[int, int]:
    """(synchronous message requests, batch create requests) the server has received."""
    return len(server.message_requests()), len(server.batch_creates())


def _events(store: EvaluationStore, batch_id: str) -> list[tuple[str, dict]]:
    rows = store.query("SELECT event, detail_json FROM batch_job_events WHERE batch_id = ? ORDER BY id", (batch_id,))
    return [(r["event"], json.loads(r["detail_json"])) for r in rows]


@pytest.mark.slow
def test_judging_another_dataset_leaves_an_open_job_for_its_own_run_to_collect(dataset_root, tmp_path, server):
    other_root = copy_dataset(dataset_root, tmp_path / "fold_other")  # same episodes, another dataset id
    store_path = tmp_path / "shared.sqlite"
    server.batch_polls_before_end = NEVER_ENDS
    with EvaluationStore(store_path) as store:
        first = run_judge(
            open_dataset(dataset_root), RUBRIC, _config(dataset_root, store_path), store, judge_client(server)
        )
        assert first.interrupted
        (job_a,) = store.open_batch_jobs(first.config_hash, "fold_virtual")
        server.batch_polls_before_end = 0
        other = run_judge(
            open_dataset(other_root), RUBRIC, _config(other_root, store_path), store, judge_client(server)
        )
        assert other.config_hash == first.config_hash  # the configuration alone does not tell them apart
        assert (other.scored, other.interrupted) == (5, False)
        assert [j.batch_id for j in store.open_batch_jobs(first.config_hash, "fold_virtual")] == [job_a.batch_id]
        assert _events(store, job_a.batch_id) == []  # neither abandoned nor collected by the other dataset
        other_calls = store.query("SELECT DISTINCT batch_id FROM calls WHERE run_id = ?", (other.run_id,))
        assert job_a.batch_id not in {r[0] for r in other_calls}
        before = _paid(server)
        again = run_judge(
            open_dataset(dataset_root), RUBRIC, _config(dataset_root, store_path), store, judge_client(server)
        )
        assert (again.scored, again.interrupted) == (5, False)
        assert _paid(server) == before  # collected: zero new requests
        calls = store.query("SELECT DISTINCT batch_id FROM calls WHERE run_id = ?", (again.run_id,))
        assert [r[0] for r in calls] == [job_a.batch_id]
        assert [e for e, _ in _events(store, job_a.batch_id)] == ["collected"]
    assert len(server.batches()) == 2  # one per dataset
    assert server.problems() == []


def test_an_episode_changed_after_submission_is_submitted_again(dataset_root, tmp_path, server):
    root = copy_dataset(dataset_root, tmp_path / "fold_changed")
    store_path = tmp_path / "eval.sqlite"
    server.batch_polls_before_end = NEVER_ENDS
    with EvaluationStore(store_path) as store:
        first = run_judge(open_dataset(root), RUBRIC, _config(root, store_path), store, judge_client(server))
        assert first.interrupted
        old_fp = open_dataset(root).fingerprint(open_dataset(root).episode(2))
        nudge_episode_state(root, episode=2)
        source = open_dataset(root)
        new_fp = source.fingerprint(source.episode(2))
        assert new_fp != old_fp
        server.batch_polls_before_end = 0
        second = run_judge(source, RUBRIC, _config(root, store_path), store, judge_client(server))
        assert (second.scored, second.interrupted) == (5, False)
        first_batch, resubmitted = server.batches()
        assert [r["custom_id"].split("-")[0] for r in resubmitted.requests] == ["ep2"]
        results = {
            r["episode_index"]: r
            for r in store.query("SELECT * FROM episode_results WHERE run_id = ?", (second.run_id,))
        }
        assert results[2]["episode_fingerprint"] == new_fp
        calls = store.query(
            "SELECT episode_index, batch_id, episode_fingerprint FROM calls WHERE run_id = ?", (second.run_id,)
        )
        assert {(c[1], c[2]) for c in calls if c[0] == 2} == {(resubmitted.id, new_fp)}  # the stale result ignored
        assert {c[1] for c in calls if c[0] != 2} == {first_batch.id}
        assert _events(store, first_batch.id) == [
            ("superseded", {"episode": 2, "submitted_fingerprint": old_fp, "current_fingerprint": new_fp}),
            ("collected", {}),
        ]
    assert server.problems() == []


@pytest.mark.parametrize(
    ("fault", "event", "creates"),
    [
        (CreateFault(created=True, delay_s=SHORT_TIMEOUT_S * 2), "adopted", 1),  # made, the reply lost to a timeout
        (CreateFault(created=True, error=HttpError(500, "api_error")), "adopted", 1),  # made, then a 500
        (CreateFault(created=False, error=HttpError(529, "overloaded_error")), "created", 2),  # not made: sent again
    ],
)
def test_a_create_whose_reply_is_lost_leaves_exactly_one_tracked_batch(
    dataset_root, tmp_path, server, fault: CreateFault, event: str, creates: int
):
    server.script_batch_create(fault)
    server.batch_polls_before_end = 0
    store_path = tmp_path / "eval.sqlite"
    client = judge_client(server, timeout_s=SHORT_TIMEOUT_S)
    with EvaluationStore(store_path) as store:
        summary = run_judge(open_dataset(dataset_root), RUBRIC, _config(dataset_root, store_path), store, client)
        assert (summary.scored, summary.interrupted) == (5, False)
        (batch,) = server.batches()
        assert [r[0] for r in store.query("SELECT batch_id FROM batch_jobs")] == [batch.id]
        outcomes = store.query("SELECT event, batch_id FROM batch_submission_events")
        assert [tuple(r) for r in outcomes] == [(event, batch.id)]
        assert {r[0] for r in store.query("SELECT batch_id FROM calls")} == {batch.id}
    assert len(server.batch_creates()) == creates
    assert server.problems() == []


def test_a_create_whose_outcome_could_not_be_checked_is_adopted_by_the_next_run(dataset_root, tmp_path, server):
    server.script_batch_create(CreateFault(created=True, error=HttpError(500, "api_error")))
    server.script_batch_list(*[HttpError(500, "api_error")] * FAST_RETRY.max_attempts)  # the check fails for good
    server.batch_polls_before_end = 0
    store_path = tmp_path / "eval.sqlite"
    config = _config(dataset_root, store_path)
    with EvaluationStore(store_path) as store:
        with pytest.raises(JudgeCallError, match="server_error"):
            run_judge(open_dataset(dataset_root), RUBRIC, config, store, judge_client(server))
        assert store.query("SELECT COUNT(*) FROM batch_jobs")[0][0] == 0  # the intent is all we know
        summary = run_judge(open_dataset(dataset_root), RUBRIC, config, store, judge_client(server))
        assert (summary.scored, summary.interrupted) == (5, False)
        (batch,) = server.batches()
        outcomes = store.query("SELECT event, batch_id FROM batch_submission_events")
        assert [tuple(r) for r in outcomes] == [("adopted", batch.id)]
    assert len(server.batch_creates()) == 1


def test_expired_and_canceled_items_are_submitted_once_more(dataset_root, tmp_path, server):
    server.script(ItemOutcome("expired"), episode=1)  # the first item of episode 1 (sample 0)
    server.script(ItemOutcome("canceled"), episode=3)
    server.batch_polls_before_end = 0
    store_path = tmp_path / "eval.sqlite"
    with EvaluationStore(store_path) as store:
        summary = run_judge(
            open_dataset(dataset_root),
            RUBRIC,
            _config(dataset_root, store_path, samples=2),
            store,
            judge_client(server),
        )
        assert (summary.scored, summary.failed) == (5, 0)
        first, follow_up = server.batches()
        assert sorted(r["custom_id"].rsplit("-", 1)[0] for r in follow_up.requests) == ["ep1-s0-first", "ep3-s0-first"]
        valid = {r["episode_index"]: r["samples_valid"] for r in store.query("SELECT * FROM episode_results")}
        assert valid == {0: 2, 1: 2, 2: 2, 3: 2, 4: 2}
        calls = store.query(
            "SELECT episode_index, sample_index, status, failure_reason, batch_id FROM calls"
            " WHERE episode_index IN (1, 3) ORDER BY call_id"
        )
        assert sorted(tuple(c) for c in calls) == sorted(
            [
                (1, 0, "failed", "batch_expired", first.id),
                (1, 0, "ok", None, follow_up.id),
                (1, 1, "ok", None, first.id),
                (3, 0, "failed", "batch_canceled", first.id),
                (3, 0, "ok", None, follow_up.id),
                (3, 1, "ok", None, first.id),
            ]
        )
        assert [e for e, _ in _events(store, first.id)] == ["resubmitted", "collected"]
        assert [e for e, _ in _events(store, follow_up.id)] == ["collected"]
    assert server.message_requests() == []
    assert server.problems() == []


def test_an_item_that_expires_again_fails_without_a_third_batch(dataset_root, tmp_path, server):
    server.script(ItemOutcome("expired"), ItemOutcome("expired"), episode=1)
    server.batch_polls_before_end = 0
    store_path = tmp_path / "eval.sqlite"
    with EvaluationStore(store_path) as store:
        summary = run_judge(
            open_dataset(dataset_root), RUBRIC, _config(dataset_root, store_path), store, judge_client(server)
        )
        assert (summary.scored, summary.failed) == (4, 1)
        failed = store.query("SELECT episode_index, failure_reason FROM episode_results WHERE status = 'failed'")
        assert [tuple(r) for r in failed] == [(1, "batch_expired")]
    assert len(server.batches()) == 2


class _EndBatchesAfterFirstOutcome(NullProgress):
    """Lets the first batch end, then keeps every later one processing (a restart while a follow-up runs)."""

    def __init__(self, server: FakeMessagesServer) -> None:
        self.server = server

    def advance(self, outcome: EpisodeOutcome) -> None:
        self.server.batch_polls_before_end = NEVER_ENDS


def test_a_follow_up_batch_is_collected_after_a_restart_with_its_siblings(dataset_root, tmp_path, server):
    server.script(ItemOutcome("expired"), episode=1)
    server.batch_polls_before_end = 0
    store_path = tmp_path / "eval.sqlite"
    config = _config(dataset_root, store_path, samples=2)
    with EvaluationStore(store_path) as store:
        first_run = run_judge(
            open_dataset(dataset_root),
            RUBRIC,
            config,
            store,
            judge_client(server),
            progress=_EndBatchesAfterFirstOutcome(server),
        )
        assert (first_run.scored, first_run.interrupted) == (4, True)  # episode 1 waits for the follow-up
        server.batch_polls_before_end = 0
        before = _paid(server)
        second_run = run_judge(open_dataset(dataset_root), RUBRIC, config, store, judge_client(server))
        assert (second_run.scored, second_run.skipped) == (1, 4)
        assert _paid(server) == before
        first, follow_up = server.batches()
        calls = store.query(
            "SELECT sample_index, batch_id FROM calls WHERE run_id = ? ORDER BY sample_index", (second_run.run_id,)
        )
        assert [tuple(c) for c in calls] == [(0, follow_up.id), (1, first.id)]  # sample 1 from the first batch
        assert (
            store.query("SELECT samples_valid FROM episode_results WHERE run_id = ?", (second_run.run_id,))[0][0] == 2
        )


def test_a_batch_reply_cut_off_at_max_tokens_is_asked_again_with_twice_the_budget(dataset_root, tmp_path, server):
    server.script(Reply(text='{"R1": {"observ', stop_reason="max_tokens"), Reply(), episode=0)
    store_path = tmp_path / "eval.sqlite"
    config = _config(dataset_root, store_path)
    config = replace(
        config, judge=replace(config.judge, max_tokens=8000), dataset=replace(config.dataset, episodes=(0,))
    )
    with EvaluationStore(store_path) as store:
        summary = run_judge(open_dataset(dataset_root), RUBRIC, config, store, judge_client(server))
    assert summary.scored == 1
    (create,) = server.batch_creates()
    assert [item["params"]["max_tokens"] for item in create.body["requests"]] == [8000]
    assert [r.body["max_tokens"] for r in server.message_requests(0)] == [16000]  # the synchronous re-ask


def test_the_breaker_opening_during_a_batch_re_ask_pauses_the_run_and_the_next_run_finishes(
    dataset_root, tmp_path, server
):
    overloaded = HttpError(529, "overloaded_error", message="Overloaded")
    server.script(Malformed(), *[overloaded] * 4, episode=1)  # its re-ask meets the outage
    store_path = tmp_path / "eval.sqlite"
    config = _config(dataset_root, store_path, concurrency=1, pause_after_overloads=4)
    retry = RetryPolicy(max_attempts=8, initial_backoff_s=0.001, max_backoff_s=0.002)
    client = AnthropicJudgeClient(
        make_sdk_client("test-key", server.base_url, SHORT_TIMEOUT_S),
        retry,
        breaker=OverloadBreaker(config.run.pause_after_overloads),
    )
    with EvaluationStore(store_path) as store:
        first = run_judge(open_dataset(dataset_root), RUBRIC, config, store, client)
        assert "4 requests in a row were answered overloaded" in first.paused
        assert first.interrupted
        assert len(server.message_requests(1)) == 4  # no fifth request once the breaker opened
        (job,) = store.open_batch_jobs(first.config_hash, "fold_virtual")  # left open for the next run
        creates = len(server.batch_creates())
        second = run_judge(open_dataset(dataset_root), RUBRIC, config, store, judge_client(server))
        scored = {r["episode_index"] for r in store.query("SELECT episode_index FROM latest_episode_results")}
        events = [event for event, _ in _events(store, job.batch_id)]
    assert len(server.batch_creates()) == creates  # collected from the same batch: nothing paid twice
    assert not second.interrupted
    assert scored == {0, 1, 2, 3, 4}
    assert events[-1] == "collected"
