"""Judge one sample: call, validate, ask again once if the output is unusable, record every call.

Flow:

    request --client--> reply --refusal--> failed ("refusal"; not asked again)
                              --valid--> ok
                              --invalid--> correction turn --> ok | invalid (flagged "invalid_output")
            --JudgeCallError after retries--> failed (its reason: rate_limited, overloaded, timeout, ...)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from evaluation.errors import JudgeCallError
from evaluation.judge.client import JudgeClient, JudgeReply, JudgeRequest
from evaluation.judge.cost import Price, TokenUsage, cost_usd
from evaluation.judge.evidence import EvidencePack
from evaluation.judge.prompt import JudgePrompt
from evaluation.judge.verdict import Verdict, parse_verdict
from evaluation.rubric import Rubric
from evaluation.store import CallRecord


@dataclass(frozen=True)
class SampleResult:
    """What one sample produced."""

    verdict: Verdict | None  # None when the sample failed or stayed invalid
    failure_reason: str | None  # e.g. "overloaded", "refusal", "invalid_output"
    calls: tuple[CallRecord, ...]  # every request made for this sample
    cost_usd: float  # from the reported usage
    usage: TokenUsage  # summed over the sample's calls


@dataclass(frozen=True)
class CallContext:
    """Fields shared by every call record of a sample."""

    run_id: str  # run
    episode_index: int  # episode
    fingerprint: str  # episode content hash
    price: Price | None  # None: cost unknown
    batch: bool  # priced with the batch discount


def evaluate_reply(
    reply: JudgeReply,
    kind: str,
    request: JudgeRequest,
    pack: EvidencePack,
    rubric: Rubric,
    ctx: CallContext,
    batch_id: str | None = None,
) -> tuple[Verdict | None, CallRecord]:
    """Validate a reply and build its call record."""
    cost = cost_usd(reply.usage, ctx.price, ctx.batch) if ctx.price else None
    common = {
        "run_id": ctx.run_id,
        "episode_index": ctx.episode_index,
        "episode_fingerprint": ctx.fingerprint,
        "sample_index": pack.sample_index,
        "kind": kind,
        "custom_id": request.custom_id,
        "frame_manifest": pack.manifest(),
        "attempts": reply.attempts,
        "retry_reasons": reply.retry_reasons,
        "request_id": reply.request_id,
        "batch_id": batch_id,
        "response_model": reply.model,
        "stop_reason": reply.stop_reason,
        "latency_s": reply.latency_s,
        "usage": reply.usage.to_dict(),
        "cost_usd": cost,
        "raw_response": reply.raw_json,
    }
    if reply.stop_reason == "refusal":
        return None, CallRecord(
            **common, status="failed", failure_reason="refusal", failure_detail=reply.refusal_detail
        )
    verdict, errors = parse_verdict(reply.text, rubric, pack.refs)
    if reply.stop_reason == "max_tokens" and verdict is None:
        errors = [f"reply cut off at max_tokens={request.max_tokens}", *errors]
    if verdict is None:
        return None, CallRecord(
            **common,
            status="invalid",
            failure_reason="invalid_output",
            failure_detail=errors[0],
            validation_errors=errors,
        )
    return verdict, CallRecord(**common, status="ok", parsed=verdict.to_dict())


def failed_call(
    error: JudgeCallError,
    kind: str,
    request: JudgeRequest,
    pack: EvidencePack,
    ctx: CallContext,
    batch_id: str | None = None,
) -> CallRecord:
    """Call record of a request that failed for good."""
    return CallRecord(
        run_id=ctx.run_id,
        episode_index=ctx.episode_index,
        episode_fingerprint=ctx.fingerprint,
        sample_index=pack.sample_index,
        kind=kind,
        custom_id=request.custom_id,
        status="failed",
        frame_manifest=pack.manifest(),
        attempts=error.attempts,
        failure_reason=error.reason,
        failure_detail=error.detail,
        request_id=error.request_id,
        batch_id=batch_id,
        retry_reasons=error.retry_reasons,
    )


def judge_sample(
    client: JudgeClient,
    prompt: JudgePrompt,
    request: JudgeRequest,
    pack: EvidencePack,
    rubric: Rubric,
    ctx: CallContext,
    make_request: Callable[[list[dict], str], JudgeRequest],
    first: JudgeReply | JudgeCallError | None = None,
    batch_id: str | None = None,
) -> SampleResult:
    """Run (or finish) one sample; `first` passes a reply already obtained (Message Batches)."""
    calls: list[CallRecord] = []
    if first is None:
        try:
            first = client.complete(request)
        except JudgeCallError as e:
            first = e
    if isinstance(first, JudgeCallError):
        calls.append(failed_call(first, "first", request, pack, ctx, batch_id))
        return _result(None, first.reason, calls)
    verdict, record = evaluate_reply(first, "first", request, pack, rubric, ctx, batch_id)
    calls.append(record)
    if verdict is not None or record.failure_reason == "refusal":
        return _result(verdict, record.failure_reason, calls)
    retry = make_request(prompt.correction_messages(first.text, record.validation_errors, rubric), "reask")
    sync_ctx = replace(ctx, batch=False)  # the re-ask always goes through the synchronous API
    try:
        second = client.complete(retry)
    except JudgeCallError as e:
        calls.append(failed_call(e, "reask", retry, pack, sync_ctx))
        return _result(None, "invalid_output", calls)
    verdict, record = evaluate_reply(second, "reask", retry, pack, rubric, sync_ctx)
    calls.append(record)
    return _result(verdict, None if verdict else (record.failure_reason or "invalid_output"), calls)


def _result(verdict: Verdict | None, reason: str | None, calls: list[CallRecord]) -> SampleResult:
    cost = sum(c.cost_usd or 0.0 for c in calls)
    usage = TokenUsage(
        input_tokens=sum((c.usage or {}).get("input_tokens", 0) for c in calls),
        output_tokens=sum((c.usage or {}).get("output_tokens", 0) for c in calls),
        cache_creation_input_tokens=sum((c.usage or {}).get("cache_creation_input_tokens", 0) for c in calls),
        cache_read_input_tokens=sum((c.usage or {}).get("cache_read_input_tokens", 0) for c in calls),
    )
    return SampleResult(verdict, None if verdict else reason, tuple(calls), cost, usage)
