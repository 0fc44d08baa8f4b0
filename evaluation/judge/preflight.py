"""Before anything is sent: estimate tokens and cost, check them with `count_tokens`, enforce the limit.

Flow:

    pending episodes --local estimate (exact prompt text, image sizes)--> calls
        --count_tokens on the first call (free; the API's own tokenizer)--> scale the estimate
        --run.max_estimated_cost_usd (default $10)--> go, or stop with the command that goes on
    A model whose price is unknown cannot be held to the limit: refused unless run.allow_unknown_price.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace

from evaluation.episode_source import DatasetSource, EpisodeRecord
from evaluation.errors import EvaluationError, JudgeCallError
from evaluation.judge.anthropic_client import AnthropicJudgeClient, call_with_retries
from evaluation.judge.command_line import CommandLine
from evaluation.judge.config import JudgeCommandConfig
from evaluation.judge.cost import RunEstimate, estimate_call, estimate_run, price_for
from evaluation.judge.dry_run import estimate_calls
from evaluation.judge.episode_prep import build_request, evidence_packs, prepare_episode
from evaluation.rubric import Rubric

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Preflight:
    """The estimate shown before a run."""

    estimate: RunEstimate  # after scaling by the count_tokens check
    local_tokens: int | None  # local estimate of the first call's input tokens
    counted_tokens: int | None  # count_tokens result for the same call (None when not checked)


def preflight(
    source: DatasetSource,
    rubric: Rubric,
    config: JudgeCommandConfig,
    pending: list[tuple[EpisodeRecord, str]],
    client: AnthropicJudgeClient | None,
    command: CommandLine | None = None,
) -> Preflight:
    """Estimate the run; with a client, calibrate the estimate on the first call with `count_tokens`.

    Args:
        source: The opened dataset.
        rubric: The rubric.
        config: The command configuration.
        pending: Episodes to judge, with their fingerprints.
        client: Judge client for `count_tokens` (None: local estimate only).
        command: The command as typed, so a refusal can print the command that goes on (None: the flag only).

    Raises:
        EvaluationError: The estimate exceeds `run.max_estimated_cost_usd`, or the model's price is unknown
            and `run.allow_unknown_price` is not set.
    """
    calls = estimate_calls(source, rubric, config, pending)
    local = counted = None
    if client is not None and pending and config.judge.count_tokens:
        local, counted = _count_first_call(source, rubric, config, pending[0][0], client)
        if counted:
            ratio = counted / local
            calls = [
                replace(
                    c,
                    cacheable_tokens=round(c.cacheable_tokens * ratio),
                    text_tokens=round(c.text_tokens * ratio),
                    image_tokens=round(c.image_tokens * ratio),
                )
                for c in calls
            ]
    price = price_for(config.judge.model, config.judge.input_usd_per_mtok, config.judge.output_usd_per_mtok)
    estimate = estimate_run(calls, price, batch=config.run.use_message_batches)
    check_cost_limit(estimate, config, command)
    return Preflight(estimate, local, counted)


def check_cost_limit(estimate: RunEstimate, config: JudgeCommandConfig, command: CommandLine | None = None) -> None:
    """Refuse a run whose estimate exceeds the limit, or whose cost cannot be estimated (unknown price).

    Raises:
        EvaluationError: One line: what was refused and the command (or flag) that goes on.
    """
    limit = config.run.max_estimated_cost_usd
    if estimate.usd is None:
        if config.run.allow_unknown_price:
            log.warning("the price of %s is unknown: no cost limit holds for this run", config.judge.model)
            return
        raise EvaluationError(
            f"the price of judge.model={config.judge.model!r} is unknown, so the run cannot be held to "
            f"run.max_estimated_cost_usd=${limit:.2f}; give its price (--judge.input_usd_per_mtok=<USD> "
            "--judge.output_usd_per_mtok=<USD>), or run without a cost limit: "
            + _go_on(command, "--run.allow_unknown_price=true")
        )
    if estimate.usd > limit:
        raise EvaluationError(
            f"estimated cost ${estimate.usd:.2f} exceeds run.max_estimated_cost_usd=${limit:.2f}; judge fewer "
            "episodes (--dataset.episodes=[...]) or fewer samples (--judge.samples), or raise the limit: "
            + _go_on(command, f"--run.max_estimated_cost_usd={math.ceil(estimate.usd)}")
        )


def _go_on(command: CommandLine | None, flag: str) -> str:
    return command.with_args(flag) if command is not None else f"add {flag}"


def _count_first_call(
    source: DatasetSource,
    rubric: Rubric,
    config: JudgeCommandConfig,
    episode: EpisodeRecord,
    client: AnthropicJudgeClient,
) -> tuple[int, int | None]:
    prepared = prepare_episode(source, episode, rubric, config, samples=1)
    pack = evidence_packs(source, prepared, config.frames.jpeg_quality)[0]
    prompt, request = build_request(rubric, prepared, pack, config)
    local = estimate_call(prompt, pack, 0, config.judge.chars_per_token).input_tokens
    params = request.params()
    try:
        counted, _, _ = call_with_retries(
            lambda: (
                client.sdk.messages.count_tokens(
                    model=params["model"],
                    system=params["system"],
                    messages=params["messages"],
                    output_config=params["output_config"],
                ).input_tokens
            ),
            client.retry,
            "count_tokens",
        )
    except JudgeCallError as e:
        log.warning("count_tokens failed (%s); the estimate stays local", e)
        return local, None
    return local, counted
