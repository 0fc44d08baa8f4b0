"""How actions are produced from a policy: which engine, and its knobs. Parsed once by so101-deploy.

    --engine.kind=async --engine.refill_threshold=30 --engine.blend=crossfade
    --engine.kind=rtc                     (SmolVLA checkpoints with RTC)
    --engine.kind=ensemble --engine.ensemble_coeff=0.01   (ACT; falls back to async when too slow)
    --engine.kind=remote                  (LeRobot's policy server elsewhere: RemoteEngineConfig in remote.py)

Every field is validated on construction; a bad value names the field, the value and what is allowed.
"""

import math
from dataclasses import dataclass
from enum import StrEnum

from policies.engines.blend import BlendMode
from robot.config_checks import reject_non_finite
from robot.errors import ConfigError


class EngineKind(StrEnum):
    """The closed set of inference engines."""

    SYNC = "sync"  # chunk computed on the control thread when the queue is empty (LeRobot's select_action)
    ASYNC = "async"  # next chunk computed on a worker thread while the current one executes
    RTC = "rtc"  # async + real-time chunking inside the model (SmolVLA)
    ENSEMBLE = "ensemble"  # ACT temporal ensembling: a chunk per tick (needs a fast machine)
    REMOTE = "remote"  # LeRobot's async-inference policy server on another host


@dataclass(frozen=True)
class EngineConfig:
    """Which engine runs the policy, and how."""

    kind: EngineKind = EngineKind.ASYNC  # sync, async, rtc, ensemble or remote
    n_action_steps: int | None = None  # actions executed per chunk; None: the checkpoint's own n_action_steps
    refill_threshold: int | None = None  # ask for the next chunk when this many actions remain; None: from latency
    latency_margin: float = 1.5  # automatic threshold covers the recent worst chunk latency times this
    expected_latency_s: float | None = None  # latency estimate before the first chunk is timed, seconds
    blend: BlendMode = BlendMode.CROSSFADE  # async: how a new chunk takes over the overlap (crossfade, replace)
    blend_steps: int | None = None  # async: cross-fade over at most this many actions; None: the whole overlap
    ensemble_coeff: float = 0.01  # ensemble: weight exp(-coeff * i) of the i-th oldest prediction (ACT's default)
    ensemble_budget: float = 0.8  # ensemble: only when a chunk takes at most this fraction of a period
    warmup_calls: int = 3  # ensemble: timed predictor calls (after one untimed) to decide whether it keeps up
    # so101-replay: compute the first chunk before each episode starts, so its first ticks are not starved
    # (so101-deploy always starts recording an episode at the policy's first action instead)
    prime: bool = True

    def __post_init__(self) -> None:
        reject_non_finite(self, "engine")
        kinds = [kind.value for kind in EngineKind]
        blends = [mode.value for mode in BlendMode]
        latency = self.expected_latency_s
        for name, ok, allowed in (
            ("kind", self.kind in kinds, f"one of {', '.join(kinds)}"),
            ("n_action_steps", self.n_action_steps is None or self.n_action_steps >= 1, "an int >= 1, or null"),
            ("refill_threshold", self.refill_threshold is None or self.refill_threshold >= 0, "an int >= 0, or null"),
            ("latency_margin", math.isfinite(self.latency_margin) and self.latency_margin >= 1, "a number >= 1"),
            (
                "expected_latency_s",
                latency is None or (math.isfinite(latency) and latency >= 0),
                "seconds >= 0, or null",
            ),
            ("blend", self.blend in blends, f"one of {', '.join(blends)}"),
            ("blend_steps", self.blend_steps is None or self.blend_steps >= 0, "an int >= 0, or null"),
            ("ensemble_coeff", math.isfinite(self.ensemble_coeff), "a finite number"),
            ("ensemble_budget", 0 < self.ensemble_budget <= 1, "a fraction in (0, 1]"),
            ("warmup_calls", self.warmup_calls >= 1, "an int >= 1"),
        ):
            if not ok:
                raise ConfigError(f"engine.{name}={getattr(self, name)!r} is not allowed; expected {allowed}")
        object.__setattr__(self, "kind", EngineKind(self.kind))
        object.__setattr__(self, "blend", BlendMode(self.blend))
