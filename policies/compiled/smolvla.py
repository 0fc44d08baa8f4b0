"""CompiledSmolVLA: a SmolVLA checkpoint's chunk computed by its two compiled graphs.

    batch (after LeRobot's preprocessor)
        │  SmolVLA's own prepare_images / prepare_state (PyTorch: resize with padding, [-1, 1], pad state)
        │  language tokens padded to tokenizer_max_length, the padding masked out
        ▼
    prefix graph ──> prefix pad mask, keys, values
        ▼
    LeRobot's euler_integrate over num_steps, each step's velocity from
        the denoise graph                       (RTC off)
        LeRobot's denoise_step in PyTorch       (RTC on: its guidance differentiates through the step)
        ▼
    (1, chunk, action dim) normalized actions -> LeRobot's postprocessor, as the PyTorch policy's

Its `predict_action_chunk` takes and returns what `SmolVLAPolicy.predict_action_chunk` does, so the
predictor, every engine and real-time chunking use it unchanged.
"""

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from policies.compiled.export import DENOISE_FILE, PREFIX_FILE
from policies.compiled.graphs import TensorCache
from policies.compiled.options import PolicyRuntime, WeightPrecision
from policies.compiled.sessions import open_session
from policies.lerobot_policy import flow_integrate, language_keys


@dataclass(frozen=True)
class ChunkTiming:
    """Where one chunk's time went (monotonic seconds): the prefix graph, then each flow-matching step."""

    prefix_s: float
    steps_s: tuple[float, ...]


class CompiledSmolVLA:
    """The chunk of a loaded SmolVLA policy, computed by `runtime` at `precision` from the graphs in `folder`."""

    def __init__(
        self,
        policy: Any,
        folder: Path,
        runtime: PolicyRuntime,
        *,
        threads: int | None = None,
        precision: WeightPrecision,
    ) -> None:
        self._policy = policy
        self._prefix = open_session(runtime, folder / PREFIX_FILE, threads, precision)
        self._denoise = open_session(runtime, folder / DENOISE_FILE, threads, precision)
        self.runtime = runtime
        self.last_timing: ChunkTiming | None = None  # of the latest chunk, for benchmarks and status lines
        self._steps_s: list[float] = []

    @property
    def inference_precision(self) -> str:
        """What the runtime computes in, as the compiled graphs report it (f32, bf16)."""
        return self._prefix.inference_precision

    def predict_action_chunk(
        self, batch: dict[str, torch.Tensor], noise: torch.Tensor | None = None, **rtc: Any
    ) -> torch.Tensor:
        """Normalized actions (1, chunk_size, action dim), as `SmolVLAPolicy.predict_action_chunk` returns them."""
        tokens_key, mask_key = language_keys()
        policy = self._policy
        config = policy.config
        model = policy.model
        images, image_masks = policy.prepare_images(batch)
        state = policy.prepare_state(batch)
        tokens, token_mask = _pad_tokens(batch[tokens_key], batch[mask_key], int(config.tokenizer_max_length))
        feeds = {
            "images": _numpy(torch.stack(images)),
            "image_masks": _numpy(torch.stack(image_masks)),
            "lang_tokens": _numpy(tokens),
            "lang_masks": _numpy(token_mask),
            "state": _numpy(state),
        }
        started = time.monotonic()
        pad_masks, keys, values = self._prefix.run(feeds)
        prefix_s = time.monotonic() - started
        self._steps_s = []
        if noise is None:
            noise = model.sample_noise((1, int(config.chunk_size), int(config.max_action_dim)), state.device)
        rtc_on = _rtc_enabled(config)
        # RTC's guidance differentiates through the step: PyTorch's, on the compiled prefix
        denoise = _torch_step(model, pad_masks, keys, values) if rtc_on else self._graph_step(pad_masks, keys, values)
        denoise = self._timed(denoise)
        actions = flow_integrate(
            denoise,
            noise.to(torch.float32),
            int(config.num_steps),
            rtc_processor=model.rtc_processor,
            rtc_enabled=rtc_on,
            inference_delay=rtc.get("inference_delay"),
            prev_chunk_left_over=rtc.get("prev_chunk_left_over"),
            execution_horizon=rtc.get("execution_horizon"),
        )
        self.last_timing = ChunkTiming(prefix_s, tuple(self._steps_s))
        return actions[:, :, : config.action_feature.shape[0]]

    def _timed(self, step):
        def timed(x_t: torch.Tensor, timestep: torch.Tensor) -> torch.Tensor:
            started = time.monotonic()
            velocity = step(x_t, timestep)
            self._steps_s.append(time.monotonic() - started)
            return velocity

        return timed

    def _graph_step(self, pad_masks: np.ndarray, keys: np.ndarray, values: np.ndarray):
        def step(x_t: torch.Tensor, timestep: torch.Tensor) -> torch.Tensor:
            feeds = {
                "prefix_pad_masks": pad_masks,
                "keys": keys,
                "values": values,
                "x_t": _numpy(x_t),
                "timestep": _numpy(timestep.to(torch.float32)),
            }
            return torch.from_numpy(self._denoise.run(feeds)[0]).to(x_t.device)

        return step


def _torch_step(model: Any, pad_masks: np.ndarray, keys: np.ndarray, values: np.ndarray):
    """LeRobot's denoise step in PyTorch on the compiled prefix (RTC's guidance needs its gradient)."""
    masks, cache = torch.from_numpy(pad_masks), TensorCache(torch.from_numpy(keys), torch.from_numpy(values))

    def step(x_t: torch.Tensor, timestep: torch.Tensor) -> torch.Tensor:
        return model.denoise_step(masks, cache, x_t, timestep)

    return step


def _pad_tokens(tokens: torch.Tensor, mask: torch.Tensor, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Tokens padded (masked out) or cut to `length`: the graph's shape is fixed at export."""
    tokens, mask = tokens[:, :length], mask[:, :length].to(torch.bool)
    missing = length - tokens.shape[1]
    if missing > 0:
        tokens = torch.nn.functional.pad(tokens, (0, missing), value=0)
        mask = torch.nn.functional.pad(mask, (0, missing), value=False)
    return tokens, mask


def _rtc_enabled(config: Any) -> bool:
    rtc = getattr(config, "rtc_config", None)
    return bool(rtc is not None and rtc.enabled)


def _numpy(tensor: torch.Tensor) -> np.ndarray:
    return np.ascontiguousarray(tensor.detach().to("cpu").numpy())
