"""Before anything is sent: estimate tokens and cost, check them with `count_tokens`, enforce the limit.

Flow:

    pending episodes --local estimate (exact prompt text, image sizes)--> calls
        --count_tokens on the first call (free; the API's own tokenizer)--> scale the estimate
        --run.max_estimated_cost_usd--> go, or stop with a message
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from evaluation.anthropic_client import AnthropicJudgeClient, call_with_retries
from evaluation.config import JudgeCommandConfig
from evaluation.cost import RunEstimate, estimate_call, estimate_run, price_for
from evaluation.dry_run import estimate_calls
from evaluation.episode_prep import build_request, evidence_packs, prepare_episode
from evaluation.episode_source import DatasetSource, EpisodeRecord
from evaluation.errors import EvaluationError, JudgeCallError
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
) -> Preflight:
    """Estimate the run; with a client, calibrate the estimate on the first call with `count_tokens`.

    Raises:
        EvaluationError: The estimate exceeds `run.max_estimated_cost_usd`.
    """
    calls = estimate_calls(source, rubric, config, pending)
    local = counted = None
    if client is not None and pending and config.judge.count_tokens:
        local, counted = _count_first_call(source, rubric, config, pending[0][0], client)
        if counted:
            ratio = counted / local
            calls = [
                replace(c, cacheable_tokens=round(c.cacheable_tokens * ratio), text_tokens=round(c.text_tokens * ratio),
                        image_tokens=round(c.image_tokens * ratio))
                for c in calls
            ]  # fmt: skip
    price = price_for(config.judge.model, config.judge.input_usd_per_mtok, config.judge.output_usd_per_mtok)
    estimate = estimate_run(calls, price, batch=config.run.use_message_batches)
    limit = config.run.max_estimated_cost_usd
    if limit and estimate.usd is not None and estimate.usd > limit:
        raise EvaluationError(
            f"estimated cost ${estimate.usd:.2f} exceeds run.max_estimated_cost_usd=${limit:.2f}; raise the limit, "
            "judge fewer episodes (--dataset.episodes=[...]) or fewer samples (--judge.samples)"
        )
    return Preflight(estimate, local, counted)


def _count_first_call(
    source: DatasetSource, rubric: Rubric, config: JudgeCommandConfig, episode: EpisodeRecord,
    client: AnthropicJudgeClient,
) -> tuple[int, int | None]:  # fmt: skip
    prepared = prepare_episode(source, episode, rubric, config, samples=1)
    pack = evidence_packs(source, prepared, config.frames.jpeg_quality)[0]
    prompt, request = build_request(rubric, prepared, pack, config)
    local = estimate_call(prompt, pack, 0, config.judge.chars_per_token).input_tokens
    params = request.params()
    try:
        counted, _, _ = call_with_retries(
            lambda: client.sdk.messages.count_tokens(
                model=params["model"], system=params["system"], messages=params["messages"],
                output_config=params["output_config"],
            ).input_tokens,
            client.retry,
            "count_tokens",
        )  # fmt: skip
    except JudgeCallError as e:
        log.warning("count_tokens failed (%s); the estimate stays local", e)
        return local, None
    return local, counted
