"""SmolVLA's inference split into the two graphs the compiled runtime runs (PyTorch modules to export).

    prefix graph:  images, image masks, language tokens and mask, state
                   -> prefix pad mask, keys and values of every VLM layer (the "KV cache")
    denoise graph: prefix pad mask, keys, values, x_t, t  ->  v_t  (one flow-matching step)

Both call LeRobot's own `VLAFlowMatching` methods (`embed_prefix`, `denoise_step`, the VLM-with-
expert forward); only the cache differs: LeRobot fills a transformers `DynamicCache`, an object no
exporter can carry across graphs, so the prefix graph returns its tensors stacked and the denoise
graph wraps them in `TensorCache`, which answers the two calls LeRobot's layers make of a cache.
The Euler loop between steps stays in Python (`policies/compiled/smolvla.py`), so real-time
chunking can still guide it.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from policies.lerobot_policy import smolvla_attention_masks


@dataclass
class _Layer:
    keys: torch.Tensor  # (batch, kv heads, prefix length, head dim), as DynamicCache stores them
    values: torch.Tensor


class TensorCache:
    """The prefix's keys and values as a read-only cache: `update` returns [prefix; new] and stores nothing.

    LeRobot's self-attention layers call `update(k, v, layer)` and use what it returns; its cross-
    attention layers read `layers[i].keys`; its denoise step then calls `crop(prefix length)`.
    Storing nothing is what makes one step a pure function (LeRobot's cache appends, then crops).
    """

    def __init__(self, keys: torch.Tensor, values: torch.Tensor) -> None:
        self.layers = [_Layer(keys[i], values[i]) for i in range(keys.shape[0])]

    def update(self, keys: torch.Tensor, values: torch.Tensor, layer_idx: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The layer's prefix keys and values with `keys` and `values` appended (sequence axis)."""
        layer = self.layers[layer_idx]
        return torch.cat([layer.keys, keys], dim=2), torch.cat([layer.values, values], dim=2)

    def crop(self, length: int) -> None:
        """LeRobot crops back to the prefix after each step; nothing was stored, so nothing to do."""


class PrefixGraph(nn.Module):
    """Images, language and state -> (prefix pad mask, stacked keys, stacked values)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model  # LeRobot's VLAFlowMatching

    def forward(
        self,
        images: torch.Tensor,  # (cameras, batch, 3, H, W), in [-1, 1] (after SmolVLA's prepare_images)
        image_masks: torch.Tensor,  # (cameras, batch) bool
        lang_tokens: torch.Tensor,  # (batch, tokens) int64
        lang_masks: torch.Tensor,  # (batch, tokens) bool
        state: torch.Tensor,  # (batch, max_state_dim)
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Embed the prefix and run every VLM layer over it; keys and values stacked over layers."""
        model = self.model
        embs, pad_masks, att_masks = model.embed_prefix(
            list(images.unbind(0)), list(image_masks.unbind(0)), lang_tokens, lang_masks, state=state
        )
        att_2d = smolvla_attention_masks(pad_masks, att_masks)
        position_ids = torch.cumsum(pad_masks, dim=1) - 1
        _, cache = model.vlm_with_expert.forward(
            attention_mask=att_2d,
            position_ids=position_ids,
            past_key_values=None,
            inputs_embeds=[embs, None],
            use_cache=True,
        )
        keys = torch.stack([layer.keys for layer in cache.layers])
        values = torch.stack([layer.values for layer in cache.layers])
        return pad_masks, keys, values


class DenoiseGraph(nn.Module):
    """One flow-matching step: (prefix pad mask, keys, values, x_t, t) -> v_t."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(
        self,
        prefix_pad_masks: torch.Tensor,  # (batch, prefix length) bool
        keys: torch.Tensor,  # (layers, batch, kv heads, prefix length, head dim)
        values: torch.Tensor,
        x_t: torch.Tensor,  # (batch, chunk, max_action_dim)
        timestep: torch.Tensor,  # (batch,) float32
    ) -> torch.Tensor:
        """The velocity v_t (batch, chunk, max_action_dim) at `x_t`, `timestep`."""
        return self.model.denoise_step(prefix_pad_masks, TensorCache(keys, values), x_t, timestep)


PREFIX_INPUTS: Sequence[str] = ("images", "image_masks", "lang_tokens", "lang_masks", "state")
PREFIX_OUTPUTS: Sequence[str] = ("prefix_pad_masks", "keys", "values")
DENOISE_INPUTS: Sequence[str] = ("prefix_pad_masks", "keys", "values", "x_t", "timestep")
DENOISE_OUTPUTS: Sequence[str] = ("v_t",)
