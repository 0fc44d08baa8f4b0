"""Before a live judge run sends anything: its API client and the estimate it is held to.

Flow:

    API key --> SDK client (own retries off) + one overload breaker shared by all workers --> client
    pending episodes --preflight (local estimate, count_tokens, cost limit)--> the line shown before sending
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluation.episode_source import DatasetSource
from evaluation.judge.anthropic_client import AnthropicJudgeClient, make_sdk_client
from evaluation.judge.breaker import OverloadBreaker
from evaluation.judge.command_line import CommandLine
from evaluation.judge.config import JudgeCommandConfig, judgment_hash
from evaluation.judge.preflight import Preflight, preflight
from evaluation.judge.run import select_pending
from evaluation.rubric import Rubric
from evaluation.store import EvaluationStore


@dataclass(frozen=True)
class LiveStart:
    """A live run, ready to send."""

    client: AnthropicJudgeClient  # the run's client
    estimate_line: str  # what the run will send and cost, for the console


def start_live(
    source: DatasetSource,
    rubric: Rubric,
    config: JudgeCommandConfig,
    store: EvaluationStore,
    api_key: str,
    command: CommandLine,
) -> LiveStart:
    """Build the client and check the estimate of the episodes still to judge.

    Raises:
        EvaluationError: The estimate exceeds `run.max_estimated_cost_usd`, or the model's price is unknown
            and `run.allow_unknown_price` is not set (preflight.py).
    """
    sdk = make_sdk_client(api_key, config.judge.base_url or None, config.judge.request_timeout_s)
    breaker = OverloadBreaker(config.run.pause_after_overloads)  # one per run, shared by all workers
    client = AnthropicJudgeClient(sdk, config.judge.retry, breaker=breaker)
    pending, _ = select_pending(source, config, store, judgment_hash(config, rubric))
    check = preflight(source, rubric, config, pending, client, command)
    return LiveStart(client, estimate_line(check, config.judge.model))


def estimate_line(check: Preflight, model: str) -> str:
    """'estimate before sending: N calls to MODEL, ~T input tokens per call, $C' (and the count_tokens check)."""
    estimate = check.estimate
    cost = "unknown price" if estimate.usd is None else f"${estimate.usd:.2f}"
    counted = ""
    if check.counted_tokens is not None:
        first_call = f"count_tokens: {check.counted_tokens:,} for the first call"
        counted = f" ({first_call}, local estimate {check.local_tokens:,})"
    return (
        f"estimate before sending: {estimate.calls} calls to {model}, "
        f"~{estimate.input_tokens_per_call:,.0f} input tokens per call, {cost}{counted}"
    )
