from pathlib import Path

import pytest

from evaluation.cost import (
    CallEstimate,
    Price,
    TokenUsage,
    cost_usd,
    estimate_call,
    estimate_run,
    image_tokens,
    price_for,
)
from evaluation.episode_prep import build_request, evidence_packs, placeholder_pack, prepare_episode
from evaluation.episode_source import open_dataset
from evaluation.rubric import load_rubric
from tests.evaluation.judge_testkit import judge_client, judge_config


def test_image_tokens_follow_the_documented_rule():
    assert image_tokens(640, 480) == 410  # 640*480/750 = 409.6
    assert image_tokens(128, 96) == 17
    big = image_tokens(4000, 3000)  # downscaled to <= 1568 px and ~1600 tokens
    assert 1500 <= big <= 1600


def test_cost_from_usage_uses_cache_and_batch_multipliers():
    price = Price(2.0, 10.0)
    usage = TokenUsage(input_tokens=1_000_000, output_tokens=100_000, cache_creation_input_tokens=1_000_000,
                       cache_read_input_tokens=1_000_000)  # fmt: skip
    assert cost_usd(usage, price) == pytest.approx(2.0 + 1.0 + 2.5 + 0.2)
    assert cost_usd(usage, price, batch=True) == pytest.approx((2.0 + 1.0 + 2.5 + 0.2) / 2)


def test_prices_come_from_the_table_or_the_overrides():
    assert price_for("claude-sonnet-5-5") == Price(2.0, 10.0)
    assert price_for("claude-some-future-model") is None
    assert price_for("claude-some-future-model", 1.5, 7.5) == Price(1.5, 7.5)


def test_run_estimate_caches_the_system_prompt_after_the_first_call():
    call = CallEstimate(cacheable_tokens=1000, text_tokens=500, image_tokens=7000, images=17, output_tokens=1500)
    price = Price(2.0, 10.0)
    sync = estimate_run([call] * 3, price, batch=False)
    first = (1000 * 1.25 + 7500) * 2e-6 + 1500 * 10e-6
    later = (1000 * 0.1 + 7500) * 2e-6 + 1500 * 10e-6
    assert sync.usd == pytest.approx(first + 2 * later)
    assert sync.input_tokens == 3 * 8500
    assert sync.input_tokens_per_call == 8500
    batch = estimate_run([call] * 3, price, batch=True)
    assert batch.usd == pytest.approx(3 * (8500 * 2e-6 + 1500 * 10e-6) / 2)
    assert estimate_run([call], None, batch=False).usd is None


def test_estimate_agrees_with_the_usage_the_server_reports(dataset_root: Path, tmp_path: Path, server):
    """The pre-send estimate (from the exact prompt and image sizes) vs the usage the API reports."""
    config = judge_config(dataset_root, tmp_path / "s.sqlite", samples=2)
    rubric = load_rubric()
    source = open_dataset(dataset_root)
    prepared = prepare_episode(source, source.episode(0), rubric, config, samples=2)
    client = judge_client(server)
    estimates, usages = [], []
    for sample, pack in enumerate(evidence_packs(source, prepared, config.frames.jpeg_quality)):
        prompt, request = build_request(rubric, prepared, pack, config)
        estimate = estimate_call(prompt, pack, expected_output_tokens=0)
        blank = placeholder_pack(prepared, sample)  # what the dry run estimates from, without decoding
        assert estimate_call(build_request(rubric, prepared, blank, config)[0], blank, 0) == estimate
        reply = client.complete(request)
        assert reply.usage.total_input_tokens == pytest.approx(estimate.input_tokens, rel=0.02)
        cached = reply.usage.cache_creation_input_tokens if sample == 0 else reply.usage.cache_read_input_tokens
        assert cached == pytest.approx(estimate.cacheable_tokens, rel=0.02)
        estimates.append(estimate)
        usages.append(TokenUsage(**{**reply.usage.to_dict(), "output_tokens": 0}))
    price = price_for(config.judge.model)
    reported = sum(cost_usd(u, price) for u in usages)
    assert estimate_run(estimates, price, batch=False).usd == pytest.approx(reported, rel=0.02)
