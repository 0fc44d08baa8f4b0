"""ACT temporal ensembling: LeRobot's weights and order, and the measured fallback when too slow."""

import logging

import numpy as np
import pytest
import torch
from lerobot.policies.act.modeling_act import ACTTemporalEnsembler

from policies.engines.async_engine import AsyncEngine
from policies.engines.config import EngineConfig, EngineKind
from policies.engines.ensemble import EnsembleEngine, TemporalEnsembler, ensembling_fallback_notice
from policies.engines.factory import make_engine
from policies.testing.scripted_predictor import ScriptedPredictor
from policies.testing.tiny_policies import write_tiny_act
from tests.policies.engines import lerobot_reference
from tests.policies.engines.helpers import inputs_at


@pytest.mark.parametrize("coeff", [0.01, 0.0, -0.3, 0.5])
def test_ensembled_actions_equal_lerobots_act_temporal_ensembler(coeff):
    chunk_size, ticks = 8, 20
    chunks = np.random.default_rng(1).normal(0, 10, (ticks, chunk_size, 12)).astype(np.float32)
    ours = TemporalEnsembler(coeff, chunk_size)
    theirs = ACTTemporalEnsembler(coeff, chunk_size)
    for chunk in chunks:
        expected = theirs.update(torch.from_numpy(chunk)[None]).squeeze(0).numpy()
        np.testing.assert_allclose(ours.update(chunk), expected, rtol=1e-5, atol=1e-4)
    ours.reset()
    theirs.reset()
    np.testing.assert_allclose(ours.update(chunks[0]), chunks[0][0], rtol=1e-6)


def test_the_weights_are_exp_minus_coeff_i_oldest_first():
    ensembler = TemporalEnsembler(coeff=np.log(2.0), chunk_size=3)  # w = 1, 1/2, 1/4
    ensembler.update(np.full((3, 1), 0.0))
    ensembler.update(np.full((3, 1), 3.0))
    action = ensembler.update(np.full((3, 1), 7.0))  # three predictions for this tick: 0, 3, 7
    assert action[0] == pytest.approx((1 * 0 + 0.5 * 3 + 0.25 * 7) / 1.75)


@pytest.fixture(scope="module")
def ensembling_act(tmp_path_factory):
    directory = write_tiny_act(tmp_path_factory.mktemp("ensemble") / "act", chunk_size=6)
    return lerobot_reference.with_config(directory, temporal_ensemble_coeff=0.01, n_action_steps=1)


def test_ensemble_engine_equals_lerobots_act_select_action(ensembling_act, make_input):
    ours = EnsembleEngine(lerobot_reference.predictor(ensembling_act), coeff=0.01)
    theirs = lerobot_reference.load(ensembling_act)
    assert theirs.policy.config.temporal_ensemble_coeff == 0.01
    for tick in range(9):  # past a full chunk of overlapping predictions
        inputs = make_input(seed=tick)
        action = ours.next_action(inputs, tick)
        np.testing.assert_allclose(action.values, lerobot_reference.lerobot_action(theirs, inputs), atol=1e-3)
    assert ours.stats().chunks == 9  # one forward per tick


def test_fallback_notice_has_the_measured_numbers():
    assert ensembling_fallback_notice(0.58, fps=30) == (
        "temporal ensembling needs a chunk every 33 ms; this machine takes 580 ms: using async chunking"
    )
    assert ensembling_fallback_notice(0.010, fps=30) is None


def test_a_slow_predictor_falls_back_to_async_with_a_measured_warning(caplog):
    predictor = ScriptedPredictor(chunk_size=10, latency_s=0.06)
    config = EngineConfig(kind=EngineKind.ENSEMBLE, warmup_calls=2)
    with caplog.at_level(logging.WARNING, logger="policies.engines.factory"):
        choice = make_engine(config, predictor, fps=30, warmup=inputs_at(0))
    try:
        assert choice.kind is EngineKind.ASYNC
        assert isinstance(choice.engine, AsyncEngine)
        assert choice.measured_latency_s >= 0.06  # measured: the predictor's 60 ms sleep, and whatever the machine adds
        assert choice.notice.startswith("temporal ensembling needs a chunk every 33 ms; this machine takes ")
        assert choice.notice.endswith(" ms: using async chunking")
        assert choice.notice in caplog.text
        assert len(predictor.calls) == 3  # one untimed warm-up call and two timed ones
        assert choice.engine.latencies.estimate_s() == choice.measured_latency_s  # seeds the refill threshold
    finally:
        choice.engine.close()


def test_a_fast_predictor_gets_temporal_ensembling():
    choice = make_engine(
        EngineConfig(kind=EngineKind.ENSEMBLE), ScriptedPredictor(chunk_size=10), fps=30, warmup=inputs_at(0)
    )
    assert choice.kind is EngineKind.ENSEMBLE
    assert choice.notice is None
    assert isinstance(choice.engine, EnsembleEngine)
