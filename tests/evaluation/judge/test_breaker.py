"""The run-level circuit breaker: a sustained overload pauses the run, and the next run resumes it."""

import json
import shlex
import threading

import pytest

from evaluation.commands.judge import main
from evaluation.episode_source import open_dataset
from evaluation.errors import ConfigError
from evaluation.judge.anthropic_client import AnthropicJudgeClient, RetryPolicy, make_sdk_client
from evaluation.judge.breaker import BREAKER_OPEN, OverloadBreaker
from evaluation.judge.run import run_judge
from evaluation.rubric import load_rubric
from evaluation.store import EvaluationStore
from evaluation.testing.fake_api_script import HttpError, Reply
from robot.shell.exit_codes import Exit
from tests.evaluation.judge.judge_testkit import REQUEST_TIMEOUT_S, judge_config

RUBRIC = load_rubric()
OVERLOADED = HttpError(529, "overloaded_error", message="Overloaded")


def _client(server, max_attempts: int, breaker: OverloadBreaker) -> AnthropicJudgeClient:
    retry = RetryPolicy(max_attempts=max_attempts, initial_backoff_s=0.001, max_backoff_s=0.002)
    return AnthropicJudgeClient(make_sdk_client("test-key", server.base_url, REQUEST_TIMEOUT_S), retry, breaker=breaker)


def test_the_breaker_counts_overloads_in_a_row_from_every_thread():
    breaker = OverloadBreaker(20)
    threads = [
        threading.Thread(target=lambda: [breaker.record_reply(overloaded=True) for _ in range(5)]) for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not breaker.is_open  # 15 in a row
    breaker.record_reply(overloaded=False)  # any other reply ends the run of overloads
    for _ in range(19):
        breaker.record_reply(overloaded=True)
    assert not breaker.is_open
    worker = threading.Thread(target=breaker.record_reply, kwargs={"overloaded": True})
    worker.start()
    worker.join()
    assert breaker.is_open  # the 20th came from another thread
    breaker.record_reply(overloaded=False)
    assert breaker.is_open  # open for the rest of the run
    with pytest.raises(ConfigError, match="pause_after_overloads"):
        OverloadBreaker(0)


def test_overloads_counted_across_calls_pause_the_run_and_every_request_is_on_record(dataset_root, tmp_path, server):
    """20 overloads over three calls of 8 attempts at most: the third call is stopped, the episode left unscored."""
    server.script(*[OVERLOADED] * 20, episode=1)
    server.script(Reply(), episode=3)  # a success after the outage would reset the count: never reached
    store_path = tmp_path / "eval.sqlite"
    config = judge_config(dataset_root, store_path, samples=3, concurrency=1, pause_after_overloads=20)
    client = _client(server, max_attempts=8, breaker=OverloadBreaker(config.run.pause_after_overloads))
    with EvaluationStore(store_path) as store:
        summary = run_judge(open_dataset(dataset_root), RUBRIC, config, store, client)
        calls = store.query("SELECT * FROM calls WHERE episode_index = 1 ORDER BY call_id")
        results = {r["episode_index"]: r["status"] for r in store.query("SELECT * FROM episode_results")}
        event = store.query("SELECT event, detail_json FROM run_events")[-1]
    assert "20 requests in a row were answered overloaded" in summary.paused
    assert summary.interrupted
    assert results == {0: "scored"}  # episode 1 stays unscored; 2-4 never started
    assert summary.unfinished == (1, 2, 3, 4)
    assert [(c["status"], c["failure_reason"], c["attempts"]) for c in calls] == [
        ("failed", "overloaded", 8),
        ("failed", "overloaded", 8),
        ("failed", BREAKER_OPEN, 4),
    ]
    assert [len(json.loads(c["retry_reasons_json"])) for c in calls] == [7, 7, 3]
    assert {reason for c in calls for reason in json.loads(c["retry_reasons_json"])} == {"overloaded"}
    assert len(server.message_requests(1)) == 20  # the 21st request never started
    assert server.message_requests(2) == []
    assert (summary.calls, summary.requests, summary.retries) == (6, 23, 17)  # episode 0: 3 calls, 3 requests
    assert summary.requests == len(server.message_requests())
    assert event["event"] == "paused"
    assert json.loads(event["detail_json"])["requests"] == 23


def test_with_many_workers_no_request_starts_once_the_breaker_opens(dataset_root, tmp_path, server):
    server.script(*[OVERLOADED] * 60)  # every request of the outage, whichever worker sends it
    store_path = tmp_path / "eval.sqlite"
    config = judge_config(dataset_root, store_path, samples=1, concurrency=3)
    client = _client(server, max_attempts=25, breaker=OverloadBreaker(20))
    with EvaluationStore(store_path) as store:
        summary = run_judge(open_dataset(dataset_root), RUBRIC, config, store, client)
        statuses = {tuple(r) for r in store.query("SELECT status, failure_reason FROM calls")}
    assert summary.paused
    assert (summary.scored, summary.failed) == (0, 0)
    assert statuses == {("failed", BREAKER_OPEN)}
    sent = len(server.message_requests())
    assert 20 <= sent <= 20 + 2  # the 20th overload opens it; at most the other two workers' requests were on the wire
    assert summary.requests == sent


def test_a_paused_run_prints_the_resume_command_and_the_resumed_run_judges_only_the_rest(
    dataset_root, tmp_path, server, capsys, monkeypatch
):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    server.script(*[OVERLOADED] * 20, episode=2)  # the outage starts with episode 2 and ends after 20 replies
    args = [
        f"--dataset.root={dataset_root}",
        f"--store_path={tmp_path / 's.sqlite'}",
        "--judge.samples=2",
        "--run.concurrency=1",
        f"--judge.base_url={server.base_url}",
        "--judge.retry.max_attempts=25",
        "--judge.retry.initial_backoff_s=0.001",
        "--judge.retry.max_backoff_s=0.002",
    ]
    assert main(args) == Exit.PAUSED
    out = capsys.readouterr().out
    (line,) = [line for line in out.splitlines() if line.startswith("paused:")]
    assert "the API is overloaded" in line
    pasted = shlex.split(line[line.index("resume with: ") + len("resume with: ") :])
    assert pasted == ["so101-judge", *args]  # the same command: scored episodes are skipped
    flat = " ".join(out.split())
    assert "scored 2, failed 0" in flat
    assert "5 judge calls, 24 requests (19 retries)" in flat  # 4 calls of episodes 0-1, 20 requests of one call
    first = {ep: len(server.message_requests(ep)) for ep in range(5)}
    assert first == {0: 2, 1: 2, 2: 20, 3: 0, 4: 0}

    assert main(pasted[1:]) == Exit.DONE  # the stand-in has recovered
    assert "2 episode(s) already scored" in " ".join(capsys.readouterr().out.split())
    second = {ep: len(server.message_requests(ep)) - first[ep] for ep in range(5)}
    assert second == {0: 0, 1: 0, 2: 2, 3: 2, 4: 2}  # finished episodes are not judged again
    with EvaluationStore(tmp_path / "s.sqlite") as store:
        rows = store.query("SELECT episode_index, status, COUNT(*) n FROM episode_results GROUP BY episode_index")
        events = [r["event"] for r in store.query("SELECT event FROM run_events ORDER BY id")]
    assert {r["episode_index"]: (r["status"], r["n"]) for r in rows} == {i: ("scored", 1) for i in range(5)}
    assert events == ["paused", "finished"]
    assert server.problems() == []


def test_a_paused_forced_run_resumes_only_the_unfinished_episodes(dataset_root, tmp_path, server, capsys, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    server.script(*[OVERLOADED] * 20, episode=3)
    args = [
        f"--dataset.root={dataset_root}",
        f"--store_path={tmp_path / 's.sqlite'}",
        "--judge.samples=1",
        "--run.concurrency=1",
        f"--judge.base_url={server.base_url}",
        "--judge.retry.max_attempts=25",
        "--judge.retry.initial_backoff_s=0.001",
        "--judge.retry.max_backoff_s=0.002",
        "--force",
    ]
    assert main(args) == Exit.PAUSED
    line = next(line for line in capsys.readouterr().out.splitlines() if "resume with: " in line)
    pasted = shlex.split(line[line.index("resume with: ") + len("resume with: ") :])
    assert "--run.force=true" in pasted
    assert pasted[-1] == "--dataset.episodes=[3,4]"  # forced again, but only what this run left
    before = len(server.message_requests())
    assert main(pasted[1:]) == Exit.DONE
    assert {r.episode for r in server.message_requests()[before:]} == {3, 4}
