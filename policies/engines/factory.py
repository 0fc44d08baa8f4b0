"""Build the inference engine an `EngineConfig` asks for: one explicit `match`, no registry.

    choice = make_engine(EngineConfig(kind=EngineKind.ENSEMBLE), predictor, fps=30, warmup=first_inputs)
    if choice.notice:
        console.print(f"[yellow]{choice.notice}")   # e.g. ensembling too slow: async chunking instead
    engine = choice.engine

`ensemble` times the predictor on `warmup` first (LeRobot's ACT would just run too slowly) and
falls back to async chunking with a measured notice when a chunk does not fit in a period. The
engines that import LeRobot (RTC) or gRPC (remote) are imported only when asked for.
"""

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from policies.engine import ChunkPredictor, InferenceEngine, PolicyInput
from policies.engines.async_engine import AsyncEngine
from policies.engines.config import EngineConfig, EngineKind
from policies.engines.ensemble import EnsembleEngine, ensembling_fallback_notice, measure_latency_s
from policies.engines.sync import SyncEngine
from policies.errors import PolicyError
from robot.cameras.shape import CameraShape

if TYPE_CHECKING:
    from policies.engines.remote import RemoteEngineConfig

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EngineChoice:
    """The engine built, and why it may differ from the one asked for."""

    engine: InferenceEngine
    kind: EngineKind  # what was built (ensemble may become async)
    notice: str | None = None  # what the user should be told, e.g. the ensembling fallback with its numbers
    measured_latency_s: float | None = None  # the warm-up's chunk latency, when one was measured


def make_engine(
    config: EngineConfig,
    predictor: ChunkPredictor | None,
    *,
    fps: float,
    warmup: PolicyInput | None = None,
    remote: "RemoteEngineConfig | None" = None,
    cameras: Sequence[CameraShape] = (),
) -> EngineChoice:
    """The engine for `config`; `predictor` may be None only for `remote` (the server holds the policy).

    Args:
        config: the engine settings.
        predictor: the loaded policy.
        fps: the control loop's rate.
        warmup: an observation to time the predictor on (needed by `ensemble`; blocks for a few chunks).
        remote: where the policy server is and what it runs (needed by `remote`).
        cameras: the rig's cameras as (name, height, width), sent to the policy server (`remote`).

    Raises:
        PolicyError: no predictor for a local engine, no warm-up observation for `ensemble`, no
            server settings for `remote`.
    """
    if config.kind is EngineKind.REMOTE:
        if remote is None:
            raise PolicyError("engine.kind=remote needs the server settings (--remote.host, --remote.checkpoint, ...)")
        from policies.engines.remote import make_remote_engine

        return EngineChoice(make_remote_engine(remote, cameras, fps), EngineKind.REMOTE)
    if predictor is None:
        raise PolicyError(f"engine.kind={config.kind}: needs a loaded policy (only engine.kind=remote runs without)")
    if config.n_action_steps is None:
        # What the checkpoint was trained to execute per chunk (ACT's n_action_steps), as LeRobot does.
        config = replace(config, n_action_steps=getattr(predictor, "n_action_steps", None))
    match config.kind:
        case EngineKind.SYNC:
            return EngineChoice(SyncEngine(predictor, n_action_steps=config.n_action_steps), EngineKind.SYNC)
        case EngineKind.ASYNC:
            return EngineChoice(_async_engine(config, predictor, fps, config.expected_latency_s), EngineKind.ASYNC)
        case EngineKind.RTC:
            from policies.engines.rtc import RTCEngine

            engine = RTCEngine(
                predictor,
                fps=fps,
                n_action_steps=config.n_action_steps,
                refill_threshold=config.refill_threshold,
                latency_margin=config.latency_margin,
                expected_latency_s=config.expected_latency_s,
            )
            return EngineChoice(engine, EngineKind.RTC)
        case EngineKind.ENSEMBLE:
            return _ensemble_or_async(config, predictor, fps, warmup)
    raise PolicyError(f"engine.kind={config.kind!r} has no engine")  # unreachable: the config validates kind


def _async_engine(config: EngineConfig, predictor: ChunkPredictor, fps: float, latency_s: float | None) -> AsyncEngine:
    return AsyncEngine(
        predictor,
        fps=fps,
        n_action_steps=config.n_action_steps,
        refill_threshold=config.refill_threshold,
        latency_margin=config.latency_margin,
        expected_latency_s=latency_s,
        blend=config.blend,
        blend_steps=config.blend_steps,
    )


def _ensemble_or_async(
    config: EngineConfig, predictor: ChunkPredictor, fps: float, warmup: PolicyInput | None
) -> EngineChoice:
    if warmup is None:
        raise PolicyError(
            "engine.kind=ensemble needs a warm-up observation to time the policy before it is trusted with "
            "a chunk per tick (pass warmup=policy_input(rig.observe(), task))"
        )
    latency_s = measure_latency_s(predictor, warmup, config.warmup_calls)
    notice = ensembling_fallback_notice(latency_s, fps, config.ensemble_budget)
    if notice is not None:
        logger.warning(notice)
        engine = _async_engine(config, predictor, fps, latency_s)
        return EngineChoice(engine, EngineKind.ASYNC, notice, latency_s)
    engine = EnsembleEngine(predictor, coeff=config.ensemble_coeff)
    return EngineChoice(engine, EngineKind.ENSEMBLE, None, latency_s)
