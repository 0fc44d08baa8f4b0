"""EngineConfig validation and the factory's explicit choices."""

import pytest

from policies.engines.async_engine import AsyncEngine
from policies.engines.blend import BlendMode
from policies.engines.config import EngineConfig, EngineKind
from policies.engines.factory import make_engine
from policies.engines.rtc import RTCEngine
from policies.engines.sync import SyncEngine
from policies.errors import PolicyError
from policies.testing.scripted_predictor import ScriptedPredictor
from robot.errors import ConfigError


@pytest.mark.parametrize(("kind", "engine_type"), [("sync", SyncEngine), ("async", AsyncEngine), ("rtc", RTCEngine)])
def test_each_kind_builds_its_engine(kind, engine_type):
    config = EngineConfig(kind=kind, n_action_steps=8, refill_threshold=3)
    choice = make_engine(config, ScriptedPredictor(chunk_size=10), fps=30)
    try:
        assert isinstance(choice.engine, engine_type)
        assert choice.kind == kind
        assert choice.notice is None
        assert choice.engine.n_action_steps == 8
    finally:
        choice.engine.close()


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_by_default_the_checkpoints_own_n_action_steps_are_executed(kind):
    predictor = ScriptedPredictor(chunk_size=10)
    predictor.n_action_steps = 6  # what LeRobotPredictor reports from the checkpoint's config
    choice = make_engine(EngineConfig(kind=kind), predictor, fps=30)
    try:
        assert choice.engine.n_action_steps == 6
    finally:
        choice.engine.close()
    override = make_engine(EngineConfig(kind=kind, n_action_steps=10), predictor, fps=30)
    try:
        assert override.engine.n_action_steps == 10
    finally:
        override.engine.close()


def test_async_settings_reach_the_engine():
    config = EngineConfig(blend="replace", blend_steps=4, latency_margin=2.0, expected_latency_s=0.2)
    engine = make_engine(config, ScriptedPredictor(chunk_size=50), fps=30).engine
    assert engine.blend is BlendMode.REPLACE
    assert engine.blend_steps == 4
    assert engine.refill_threshold() == 12  # ceil(0.2 s * 2.0 * 30)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("kind", "turbo", r"engine\.kind='turbo' is not allowed; expected one of sync, async, rtc, ensemble, remote"),
        ("n_action_steps", 0, r"engine\.n_action_steps=0"),
        ("refill_threshold", -1, r"engine\.refill_threshold=-1"),
        ("latency_margin", 0.5, r"engine\.latency_margin=0\.5 .* a number >= 1"),
        ("expected_latency_s", float("nan"), r"engine\.expected_latency_s=nan"),
        ("blend", "smooth", r"engine\.blend='smooth' .* crossfade, replace"),
        ("ensemble_budget", 1.5, r"engine\.ensemble_budget=1\.5"),
        ("warmup_calls", 0, r"engine\.warmup_calls=0"),
    ],
)
def test_bad_settings_name_the_field_and_what_is_allowed(field, value, message):
    with pytest.raises(ConfigError, match=message):
        EngineConfig(**{field: value})


def test_local_engines_need_a_predictor_and_remote_needs_its_settings():
    with pytest.raises(PolicyError, match=r"engine\.kind=async: needs a loaded policy"):
        make_engine(EngineConfig(), None, fps=30)
    with pytest.raises(PolicyError, match=r"engine\.kind=remote needs the server settings"):
        make_engine(EngineConfig(kind=EngineKind.REMOTE), None, fps=30)
    with pytest.raises(PolicyError, match="needs a warm-up observation"):
        make_engine(EngineConfig(kind=EngineKind.ENSEMBLE), ScriptedPredictor(chunk_size=4), fps=30)


def test_remote_is_built_by_the_remote_module():
    from policies.engines.remote import RemoteEngine, RemoteEngineConfig

    remote = RemoteEngineConfig(checkpoint="/models/act", port=65530)
    choice = make_engine(EngineConfig(kind="remote"), None, fps=30, remote=remote, cameras=(("overhead", 96, 128),))
    assert isinstance(choice.engine, RemoteEngine)  # nothing is contacted before start()
    assert choice.kind is EngineKind.REMOTE
