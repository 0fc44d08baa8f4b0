"""Everything policies/ calls of LeRobot's policy code, in one place (pinned to lerobot 0.6.1).

LeRobot is imported by a few adapter modules only (tests/test_layers.py lists them). This one
builds LeRobot's ACT and SmolVLA models and their processors from a checkpoint folder, turns a
tick's observation into the batch a policy takes, and lends RTC its latency tracker:

    config = parse_config(folder)                       # PreTrainedConfig (draccus), as LeRobot parses it
    policy = build_policy(config)                        # the empty model, to load weights into
    pre, post = make_processors(config, folder, overrides)
    batch = pre(prepare_observation(observation, device, task, robot_type))
    to_model = action_normalizer(post)                   # rig-unit actions back into model units
    smolvla_attention_masks(pad, att); flow_integrate(...)  # SmolVLA's pieces the compiled runtime reuses

Each function raises whatever LeRobot raises; the callers turn that into our typed errors. The
imports happen when a function is called: importing LeRobot's policies takes seconds, and a
command's `--help` must not wait for it.
"""

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch


def parse_config(directory: Path) -> Any:
    """LeRobot's `PreTrainedConfig` in `directory/config.json`, without its device fallback warning."""
    import lerobot.policies  # noqa: F401 - registers the ACT and SmolVLA config types with draccus
    from lerobot.configs import PreTrainedConfig

    quiet = logging.getLogger("lerobot.configs.policies")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # "Device 'cuda' is not available. Switching ...": we choose the device later
    try:
        return PreTrainedConfig.from_pretrained(directory)
    finally:
        quiet.setLevel(level)


def build_policy(config: Any) -> Any:
    """The model `config.type` names (act, smolvla), with fresh weights to load a checkpoint into."""
    from lerobot.policies import get_policy_class

    return get_policy_class(config.type)(config)


def make_processors(config: Any, directory: Path, overrides: Mapping[str, Any]) -> tuple[Any, Any]:
    """The checkpoint's pre- and post-processor pipelines, read from `directory`."""
    from lerobot.policies import make_pre_post_processors

    return make_pre_post_processors(config, pretrained_path=str(directory), preprocessor_overrides=dict(overrides))


def prepare_observation(
    observation: Mapping[str, np.ndarray], device: torch.device, task: str, robot_type: str
) -> dict[str, Any]:
    """One tick's arrays as the batch of one a policy's preprocessor takes (LeRobot's own conversion)."""
    from lerobot.policies import prepare_observation_for_inference

    return prepare_observation_for_inference(dict(observation), device, task, robot_type)


def action_normalizer(postprocessor: Any) -> Callable[[torch.Tensor], torch.Tensor]:
    """The inverse of the postprocessor's unnormalizer, for actions only (identity when it has none)."""
    from lerobot.processor import NormalizerProcessorStep, TransitionKey, UnnormalizerProcessorStep, create_transition

    for step in postprocessor.steps:
        if isinstance(step, UnnormalizerProcessorStep):
            normalizer = NormalizerProcessorStep(features=step.features, norm_map=step.norm_map, stats=step.stats)
            return lambda actions: normalizer(create_transition(action=actions))[TransitionKey.ACTION]
    return lambda actions: actions  # no unnormalizer: the model's actions are already in rig units


def latency_tracker() -> Any:
    """LeRobot's RTC `LatencyTracker`: `add(latency_s)` per chunk, `max()` of the recent ones (None at first)."""
    from lerobot.policies.rtc import LatencyTracker

    return LatencyTracker()


def smolvla_attention_masks(pad_masks: torch.Tensor, att_masks: torch.Tensor) -> torch.Tensor:
    """SmolVLA's 2-D attention mask from its pad and block masks (`make_att_2d_masks`)."""
    from lerobot.policies.smolvla.modeling_smolvla import make_att_2d_masks

    return make_att_2d_masks(pad_masks, att_masks)


def flow_integrate(
    denoise: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], noise: torch.Tensor, num_steps: int, **rtc: Any
) -> torch.Tensor:
    """LeRobot's Euler flow-matching loop (`euler_integrate`), RTC's guidance hook included."""
    from lerobot.policies.common.flow_matching import euler_integrate

    return euler_integrate(denoise, noise, num_steps, **rtc)


def language_keys() -> tuple[str, str]:
    """The batch keys of the tokenized task and its attention mask (after LeRobot's preprocessor)."""
    from lerobot.utils.constants import OBS_LANGUAGE_ATTENTION_MASK, OBS_LANGUAGE_TOKENS

    return OBS_LANGUAGE_TOKENS, OBS_LANGUAGE_ATTENTION_MASK
