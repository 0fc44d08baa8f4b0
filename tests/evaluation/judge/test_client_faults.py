"""The real anthropic SDK against the loopback Messages API: every scripted fault is handled."""

from dataclasses import replace
from functools import partial

import anthropic
import pytest

from evaluation.errors import JudgeCallError
from evaluation.judge.anthropic_client import RetryPolicy
from evaluation.judge.client import JudgeRequest
from evaluation.judge.cost import price_for
from evaluation.judge.sample_outcome import CallContext, judge_sample
from evaluation.rubric import load_rubric
from evaluation.testing.fake_api_script import Delay, HttpError, Malformed, Refusal, Reply, SchemaBreak
from tests.evaluation.judge.judge_testkit import SHORT_TIMEOUT_S, judge_client, tiny_pack, tiny_request

RUBRIC = load_rubric()


def _remake(messages: list[dict], kind: str, *, request: JudgeRequest) -> JudgeRequest:
    return JudgeRequest(
        f"ep7-s0-{kind}",
        request.model,
        request.max_tokens,
        request.effort,
        request.system,
        tuple(messages),
        request.schema,
    )


def _sample(server, client, pack=None):
    pack = pack or tiny_pack()
    prompt, request = tiny_request(pack, RUBRIC)
    ctx = CallContext("run", 7, "fp", price_for("claude-sonnet-5-5"), batch=False)
    return judge_sample(client, prompt, request, pack, RUBRIC, ctx, partial(_remake, request=request))


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        (HttpError(429, "rate_limit_error", retry_after_s=0.02), "rate_limited"),
        (HttpError(529, "overloaded_error"), "overloaded"),
        (HttpError(500, "api_error"), "server_error"),
        (HttpError(503, "api_error"), "server_error"),
        (HttpError(503, "overloaded_error"), "overloaded"),
    ],
)
def test_transient_errors_are_retried_then_succeed(server, fault, reason):
    server.script(fault, fault)
    _, request = tiny_request(tiny_pack(), RUBRIC)
    reply = judge_client(server).complete(request)
    assert reply.attempts == 3
    assert reply.retry_reasons == (reason, reason)
    assert reply.stop_reason == "end_turn"
    assert reply.request_id.startswith("req_fake_")
    assert len(server.message_requests()) == 3
    assert server.problems() == []


def test_timeout_is_retried(server):
    server.script(Delay(SHORT_TIMEOUT_S + 1.5))
    _, request = tiny_request(tiny_pack(), RUBRIC)
    reply = judge_client(server, timeout_s=SHORT_TIMEOUT_S).complete(request)
    assert reply.retry_reasons == ("timeout",)
    assert reply.attempts == 2


def test_retry_after_is_honoured(server):
    server.script(HttpError(429, "rate_limit_error", retry_after_s=0.4))
    _, request = tiny_request(tiny_pack(), RUBRIC)
    waits: list[float] = []
    client = judge_client(server, retry=RetryPolicy(max_attempts=2, initial_backoff_s=0.01, max_backoff_s=5.0))
    client._sleep = waits.append  # record instead of sleeping
    client.complete(request)
    assert waits == [pytest.approx(0.4)]


def test_backoff_grows_exponentially_without_retry_after():
    policy = RetryPolicy(initial_backoff_s=1.0, max_backoff_s=3.0, jitter=0.0)
    assert [policy.backoff_s(a, None) for a in (1, 2, 3, 4)] == [1.0, 2.0, 3.0, 3.0]
    assert policy.backoff_s(1, 100.0) == 3.0  # retry-after is capped


def test_persistent_overload_fails_with_its_reason_after_the_last_attempt(server):
    server.script(*[HttpError(529, "overloaded_error", message="Overloaded")] * 4)
    _, request = tiny_request(tiny_pack(), RUBRIC)
    with pytest.raises(JudgeCallError) as info:
        judge_client(server).complete(request)
    assert info.value.reason == "overloaded"
    assert info.value.attempts == 4
    assert info.value.retry_reasons == ("overloaded",) * 3  # the fourth is the failure itself
    assert "Overloaded" in info.value.detail
    assert info.value.request_id.startswith("req_fake_")


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        (HttpError(429, "rate_limit_error", error_code="enforced_spend_limit_reached"), "spend_limit"),
        (HttpError(400, "invalid_request_error", message="bad"), "bad_request"),
        (HttpError(401, "authentication_error"), "auth"),
        (HttpError(403, "permission_error", message="no access to this model"), "permission"),
    ],
)
def test_permanent_errors_are_not_retried(server, fault, reason):
    server.script(fault)
    _, request = tiny_request(tiny_pack(), RUBRIC)
    with pytest.raises(JudgeCallError) as info:
        judge_client(server).complete(request)
    assert info.value.reason == reason
    assert info.value.attempts == 1
    assert len(server.message_requests()) == 1


def test_a_request_timeout_overrides_the_clients(server):
    server.script(Delay(SHORT_TIMEOUT_S + 1.5))
    _, request = tiny_request(tiny_pack(), RUBRIC)
    reply = judge_client(server).complete(replace(request, timeout_s=SHORT_TIMEOUT_S))  # the client allows 10 s
    assert reply.retry_reasons == ("timeout",)


def test_server_checks_what_the_judge_sends(server):
    server.script(Reply())
    pack = tiny_pack()
    _, request = tiny_request(pack, RUBRIC)
    judge_client(server).complete(request)
    (recorded,) = server.message_requests()
    assert recorded.problems == []
    assert recorded.episode == 7
    # The same server rejects what the judge must never send.
    bad = request.params()
    bad["messages"] = [*bad["messages"], {"role": "assistant", "content": "{"}]
    with pytest.raises(anthropic.BadRequestError, match="sampling parameter 'temperature'") as info:
        judge_client(server).sdk.messages.create(**bad, extra_body={"temperature": 0.0})
    assert "prefill" in str(info.value)


def test_unlabelled_image_is_flagged_by_the_server(server):
    _, request = tiny_request(tiny_pack(), RUBRIC)
    params = request.params()
    content = params["messages"][0]["content"]
    del content[1]  # the label of the first image
    with pytest.raises(Exception, match="not preceded by a label"):
        judge_client(server).sdk.messages.create(**params)


def test_malformed_output_is_asked_again_once_and_then_accepted(server):
    server.script(Malformed(), Reply(scores=(("R1", 1.0), ("R2", 0.5), ("R3", 0.0))))
    result = _sample(server, judge_client(server))
    assert result.verdict is not None
    assert [c.score for c in result.verdict.criteria] == [1.0, 0.5, 0.0]
    first, second = result.calls
    assert (first.kind, first.status, first.failure_reason) == ("first", "invalid", "invalid_output")
    assert "not JSON" in first.validation_errors[0]
    assert (second.kind, second.status) == ("reask", "ok")
    reask = server.message_requests()[-1].body["messages"]
    assert [m["role"] for m in reask] == ["user", "assistant", "user"]
    assert result.cost_usd == pytest.approx(sum(c.cost_usd for c in result.calls))


def test_schema_breaking_output_twice_is_flagged(server):
    server.script(SchemaBreak(), SchemaBreak())
    result = _sample(server, judge_client(server))
    assert result.verdict is None
    assert result.failure_reason == "invalid_output"
    assert [c.status for c in result.calls] == ["invalid", "invalid"]
    assert any("score=0.7" in e for e in result.calls[1].validation_errors)
    assert len(server.message_requests()) == 2  # asked again once, not more


def test_cut_off_reply_says_so(server):
    server.script(
        Reply(text='{"R1": {"observ', stop_reason="max_tokens"), Reply(text='{"R1"', stop_reason="max_tokens")
    )
    result = _sample(server, judge_client(server))
    assert result.verdict is None
    assert result.calls[0].validation_errors[0].startswith("reply cut off at max_tokens")


def test_refusal_is_recorded_and_not_asked_again(server):
    server.script(Refusal(category="general_harms", explanation="no"))
    result = _sample(server, judge_client(server))
    assert result.verdict is None
    assert result.failure_reason == "refusal"
    (call,) = result.calls
    assert call.status == "failed"
    assert call.failure_detail == "general_harms: no"
    assert call.usage is not None
    assert len(server.message_requests()) == 1


def test_a_failed_call_becomes_a_failed_sample_with_its_reason(server):
    server.script(*[HttpError(500, "api_error")] * 4)
    result = _sample(server, judge_client(server))
    assert result.verdict is None
    assert result.failure_reason == "server_error"
    (call,) = result.calls
    assert call.status == "failed"
    assert call.attempts == 4
    assert call.usage is None
