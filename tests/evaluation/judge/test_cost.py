import re
import shlex
from dataclasses import replace
from pathlib import Path

import pytest

from evaluation.commands.judge import main
from evaluation.episode_source import open_dataset
from evaluation.errors import ConfigError, EvaluationError
from evaluation.judge.command_line import CommandLine
from evaluation.judge.config import RunConfig
from evaluation.judge.cost import (
    CallEstimate,
    Price,
    TokenUsage,
    cost_usd,
    estimate_call,
    estimate_run,
    image_tokens,
    price_for,
)
from evaluation.judge.episode_prep import build_request, evidence_packs, placeholder_pack, prepare_episode
from evaluation.judge.preflight import preflight
from evaluation.rubric import load_rubric
from evaluation.testing.fake_messages_server import FakeMessagesServer
from robot.shell.exit_codes import Exit
from tests.evaluation.judge.judge_testkit import judge_client, judge_config


def test_image_tokens_follow_the_documented_rule():
    assert image_tokens(640, 480) == 410  # 640*480/750 = 409.6
    assert image_tokens(128, 96) == 17
    big = image_tokens(4000, 3000)  # downscaled to <= 1568 px and ~1600 tokens
    assert 1500 <= big <= 1600


def test_cost_from_usage_uses_cache_and_batch_multipliers():
    price = Price(2.0, 10.0)
    usage = TokenUsage(
        input_tokens=1_000_000,
        output_tokens=100_000,
        cache_creation_input_tokens=1_000_000,
        cache_read_input_tokens=1_000_000,
    )
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


def _pending(source):
    return [(ep, source.fingerprint(ep)) for ep in source.episodes]


def test_the_default_limit_refuses_an_over_budget_run_and_names_the_limit_that_fits(dataset_root: Path, tmp_path):
    config = judge_config(dataset_root, tmp_path / "s.sqlite", samples=5)
    assert config.run.max_estimated_cost_usd == 10.0  # the default, not "no limit"
    config = replace(config, judge=replace(config.judge, input_usd_per_mtok=1000.0, output_usd_per_mtok=1000.0))
    source = open_dataset(dataset_root)
    command = CommandLine("so101-judge", (f"--dataset.root={dataset_root}", "--run.max_estimated_cost_usd=10"))
    with pytest.raises(EvaluationError) as info:
        preflight(source, load_rubric(), config, _pending(source), None, command)
    message = str(info.value)
    assert "\n" not in message
    assert "exceeds run.max_estimated_cost_usd=$10.00" in message
    found = re.search(r"(so101-judge .*)$", message)
    args = shlex.split(found.group(1))
    assert args[:2] == ["so101-judge", f"--dataset.root={dataset_root}"]
    (limit_arg,) = [a for a in args if a.startswith("--run.max_estimated_cost_usd=")]  # replaced, not added
    limit = float(limit_arg.split("=")[1])
    estimate = preflight(
        source,
        load_rubric(),
        replace(config, run=replace(config.run, max_estimated_cost_usd=limit)),
        _pending(source),
        None,
    ).estimate
    assert 10.0 < estimate.usd <= limit


def test_a_limit_of_zero_no_longer_means_no_limit():
    with pytest.raises(ConfigError, match="max_estimated_cost_usd=0"):
        RunConfig(max_estimated_cost_usd=0.0)


def test_unknown_price_is_refused_without_the_override_and_accepted_with_it(
    dataset_root, tmp_path, capsys, monkeypatch
):
    """Through so101-judge: the refusal is one line ending in a command that, pasted, runs the job."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with FakeMessagesServer() as server:  # answers any model
        args = [
            f"--dataset.root={dataset_root}",
            f"--store_path={tmp_path / 's.sqlite'}",
            "--judge.samples=1",
            "--judge.model=claude-some-future-model",
            f"--judge.base_url={server.base_url}",
        ]
        assert main(args) == Exit.FAILED
        lines = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
        (line,) = lines
        assert "price of judge.model='claude-some-future-model' is unknown" in line
        assert "--judge.input_usd_per_mtok=<USD>" in line
        assert server.message_requests() == []  # refused before any judge call
        pasted = shlex.split(line[line.index("so101-judge ") :])
        assert pasted[0] == "so101-judge"
        assert pasted[-1] == "--run.allow_unknown_price=true"
        assert pasted[1:-1] == args
        assert main(pasted[1:]) == Exit.DONE
        assert len(server.message_requests()) == 5
        assert "scored 5" in " ".join(capsys.readouterr().out.split())
