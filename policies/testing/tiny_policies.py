"""Tiny ACT and SmolVLA checkpoints, written offline, saved exactly like real LeRobot checkpoints.

    build_tiny_act(...) / build_tiny_smolvla(...)  ->  TinyPolicy(policy, preprocessor, postprocessor)
    save_checkpoint(tiny, directory)                ->  config.json, model.safetensors,
                                                        policy_preprocessor*.json/.safetensors,
                                                        policy_postprocessor*.json/.safetensors
    write_tiny_vlm(directory)                       ->  a SmolVLM config + byte-level BPE tokenizer +
                                                        processor files (no weights, no network)

Random weights, small dimensions, dataset statistics given explicitly (joint degrees, gripper
percent, ImageNet-like image statistics), so tests and demos can load, run and deploy a policy with
no hub access. SmolVLA needs a vision-language model directory for its config and tokenizer:
`write_tiny_vlm` generates one (a tokenizer trained in memory on a few sentences; its token ids
mean nothing, which is fine for random weights and wrong for real ones).

Example (in a test or a shell):

    from policies.testing.tiny_policies import write_tiny_act, write_tiny_smolvla
    write_tiny_act("outputs/tiny_act")                  # 3 cameras 96x128, 12 joints, chunk 10
    write_tiny_smolvla("outputs/tiny_smolvla")          # chunk 50, its VLM dir inside
"""

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from robot.cameras.shape import CameraShape
from robot.joints import BIMANUAL_KEYS, CAMERA_ROLES, GRIPPER, JOINT_NAMES, Side, joint_key
from teleop.dataset.vocabulary import ACTION_KEY, STATE_KEY, camera_key

# The virtual rig's cameras as tests configure them (tests/test_record_e2e.py: 96x128).
TEST_CAMERAS: tuple[CameraShape, ...] = tuple(CameraShape(role, 96, 128) for role in CAMERA_ROLES)
# A single SO-101 arm: the contract check must refuse it on a bimanual rig.
SINGLE_ARM_KEYS: tuple[str, ...] = tuple(joint_key(Side.LEFT, joint) for joint in JOINT_NAMES)
# The folder `write_tiny_smolvla` puts its VLM config and tokenizer in, inside the checkpoint.
VLM_DIR_NAME = "tiny_vlm"

_IMAGE_MEAN = (0.485, 0.456, 0.406)  # ImageNet channel statistics: plausible for camera frames in [0, 1]
_IMAGE_STD = (0.229, 0.224, 0.225)
_SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<global-img>",
    *(f"<row_{row}_col_{col}>" for row in range(1, 7) for col in range(1, 7)),
    "<fake_token_around_image>",
    "<image>",
    "<end_of_utterance>",
    "<video>",
)
_TOKENIZER_TEXT = (
    "Fold the cloth",
    "fold the towel and push it aside",
    "pick up the cube and place it in the bowl",
    "open the gripper, close the gripper, move the left arm and the right arm",
    "User: What do you see? Assistant: two robot arms above a table",
)


@dataclass(frozen=True)
class TinyPolicy:
    """A freshly built policy with its LeRobot processors (what a checkpoint directory holds)."""

    policy: Any  # lerobot PreTrainedPolicy (ACTPolicy or SmolVLAPolicy), eval mode, on CPU
    preprocessor: Any  # lerobot PolicyProcessorPipeline: robot observation batch -> model inputs
    postprocessor: Any  # lerobot PolicyProcessorPipeline: model actions -> rig units


def joint_stats(names: Sequence[str]) -> dict[str, np.ndarray]:
    """Plausible dataset statistics for joints: body joints around 0 deg (reaching +/-150), grippers 0..100 %."""
    is_gripper = np.array([name.removesuffix(".pos").endswith(GRIPPER) for name in names])
    mean = np.where(is_gripper, 40.0, 0.0)
    std = np.where(is_gripper, 25.0, 30.0)
    low = np.where(is_gripper, 0.0, -150.0)  # degrees: past percent's +/-100, so the units read as degrees
    high = np.where(is_gripper, 100.0, 150.0)
    stats = {"mean": mean, "std": std, "min": low, "max": high}
    for quantile, z in (("q01", -2.33), ("q10", -1.28), ("q50", 0.0), ("q90", 1.28), ("q99", 2.33)):
        stats[quantile] = np.clip(mean + z * std, low, high)
    return {key: value.astype(np.float32) for key, value in stats.items()}


def image_stats() -> dict[str, np.ndarray]:
    """Per-channel statistics of RGB frames in [0, 1], shaped (3, 1, 1) like LeRobot's."""
    mean = np.array(_IMAGE_MEAN, dtype=np.float32).reshape(3, 1, 1)
    std = np.array(_IMAGE_STD, dtype=np.float32).reshape(3, 1, 1)
    return {"mean": mean, "std": std, "min": np.zeros_like(mean), "max": np.ones_like(mean)}


def policy_features(
    cameras: Sequence[CameraShape], state_names: Sequence[str], action_names: Sequence[str]
) -> tuple[dict, dict, dict]:
    """LeRobot input features, output features and dataset statistics for a rig with these cameras and joints."""
    from lerobot.configs import FeatureType, PolicyFeature

    inputs = {STATE_KEY: PolicyFeature(type=FeatureType.STATE, shape=(len(state_names),))}
    for name, height, width in cameras:
        inputs[camera_key(name)] = PolicyFeature(type=FeatureType.VISUAL, shape=(3, height, width))
    outputs = {ACTION_KEY: PolicyFeature(type=FeatureType.ACTION, shape=(len(action_names),))}
    stats: dict[str, dict[str, np.ndarray]] = {
        STATE_KEY: joint_stats(state_names),
        ACTION_KEY: joint_stats(action_names),
    }
    for name, _, _ in cameras:
        stats[camera_key(name)] = image_stats()
    return inputs, outputs, stats


def with_processors(policy: Any, config: Any, stats: dict) -> TinyPolicy:
    """A fresh policy with new LeRobot processors made from its config and dataset statistics."""
    from lerobot.policies import make_pre_post_processors

    preprocessor, postprocessor = make_pre_post_processors(config, dataset_stats=stats)
    policy.eval()
    return TinyPolicy(policy=policy, preprocessor=preprocessor, postprocessor=postprocessor)


def build_tiny_act(
    *,
    cameras: Sequence[CameraShape] = TEST_CAMERAS,
    joint_names: Sequence[str] = BIMANUAL_KEYS,
    chunk_size: int = 10,
    n_action_steps: int | None = None,
    dim_model: int = 64,
    seed: int = 0,
) -> TinyPolicy:
    """A random-weight ACT (ResNet18 without pretrained weights, one small transformer layer each way).

    `joint_names` name the state and the action (12 bimanual keys, or `SINGLE_ARM_KEYS`);
    `n_action_steps` defaults to `chunk_size`.
    """
    from lerobot.policies import ACTConfig
    from lerobot.policies.act.modeling_act import ACTPolicy

    inputs, outputs, stats = policy_features(cameras, joint_names, joint_names)
    config = ACTConfig(
        input_features=inputs,
        output_features=outputs,
        device="cpu",
        pretrained_backbone_weights=None,
        chunk_size=chunk_size,
        n_action_steps=n_action_steps or chunk_size,
        dim_model=dim_model,
        n_heads=4,
        dim_feedforward=2 * dim_model,
        n_encoder_layers=1,
        n_decoder_layers=1,
        n_vae_encoder_layers=1,
        latent_dim=8,
    )
    torch.manual_seed(seed)
    return with_processors(ACTPolicy(config), config, stats)


@dataclass(frozen=True)
class VLMSize:
    """Dimensions of a SmolVLM config (the tokenizer is always the tiny one)."""

    text_hidden: int  # text model width
    text_ffn: int  # text model feed-forward width
    text_layers: int  # text decoder layers
    text_heads: int  # attention heads (query)
    text_kv_heads: int  # key/value heads
    text_head_dim: int  # width per head
    vocab_size: int  # embedding rows (>= the tiny tokenizer's 600 ids)
    vision_hidden: int  # vision tower width
    vision_ffn: int  # vision tower feed-forward width
    vision_layers: int  # vision encoder layers
    vision_heads: int  # vision attention heads
    image_size: int  # square input of the vision tower, pixels (a multiple of 16 * scale_factor)
    scale_factor: int  # pixel-shuffle factor of the connector


TINY_VLM = VLMSize(64, 128, 2, 4, 2, 16, 600, 32, 64, 1, 2, 64, 2)
# SmolVLM2-500M-Video-Instruct's dimensions (what lerobot/smolvla_base is built on), for benchmarks.
SMOLVLM2_500M = VLMSize(960, 2560, 32, 15, 5, 64, 49280, 768, 3072, 12, 12, 512, 4)


def write_tiny_vlm(directory: str | Path, *, size: VLMSize = TINY_VLM) -> Path:
    """Write a SmolVLM config, processor and byte-level BPE tokenizer into `directory` (no weights).

    What `SmolVLAConfig(vlm_model_name=directory, load_vlm_weights=False)` loads: `config.json`
    (by default a 2-layer text model with hidden 64 and a 1-layer vision tower of 64 px, patch 16),
    the processor and tokenizer files. Takes about a second; idempotent per directory.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        PreTrainedTokenizerFast,
        SmolVLMConfig,
        SmolVLMImageProcessor,
        SmolVLMProcessor,
        SmolVLMVideoProcessor,
    )

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    bpe = Tokenizer(models.BPE(unk_token="<|endoftext|>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=list(_SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(_TOKENIZER_TEXT * 4, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token="<|im_start|>",
        eos_token="<end_of_utterance>",
        pad_token="<|im_end|>",
        unk_token="<|endoftext|>",
        extra_special_tokens={
            "fake_image_token": "<fake_token_around_image>",
            "global_image_token": "<global-img>",
            "image_token": "<image>",
            "end_of_utterance_token": "<end_of_utterance>",
        },
    )
    vocab_size = max(size.vocab_size, bpe.get_vocab_size())
    pad_id = bpe.token_to_id("<|im_end|>")
    config = SmolVLMConfig(
        text_config={
            "model_type": "llama",
            "vocab_size": vocab_size,
            "hidden_size": size.text_hidden,
            "intermediate_size": size.text_ffn,
            "num_hidden_layers": size.text_layers,
            "num_attention_heads": size.text_heads,
            "num_key_value_heads": size.text_kv_heads,
            "head_dim": size.text_head_dim,
            "max_position_embeddings": 8192,
            "rope_theta": 100000.0,
            "pad_token_id": pad_id,
        },
        vision_config={
            "model_type": "smolvlm_vision",
            "hidden_size": size.vision_hidden,
            "intermediate_size": size.vision_ffn,
            "num_hidden_layers": size.vision_layers,
            "num_attention_heads": size.vision_heads,
            "patch_size": 16,
            "image_size": size.image_size,
        },
        scale_factor=size.scale_factor,
        image_token_id=bpe.token_to_id("<image>"),
        pad_token_id=pad_id,
        vocab_size=vocab_size,
    )
    config.save_pretrained(directory)
    edge = {"longest_edge": size.image_size}
    processor = SmolVLMProcessor(
        image_processor=SmolVLMImageProcessor(size=edge, max_image_size=edge),
        tokenizer=tokenizer,
        video_processor=SmolVLMVideoProcessor(),
        image_seq_len=(size.image_size // 16 // size.scale_factor) ** 2,
    )
    processor.save_pretrained(directory)
    return directory


def build_tiny_smolvla(
    vlm_dir: str | Path,
    *,
    cameras: Sequence[CameraShape] = TEST_CAMERAS,
    joint_names: Sequence[str] = BIMANUAL_KEYS,
    chunk_size: int = 50,
    n_action_steps: int | None = None,
    num_steps: int = 2,
    rtc: bool = False,
    seed: int = 0,
) -> TinyPolicy:
    """A random-weight SmolVLA on the tiny VLM in `vlm_dir` (see `write_tiny_vlm`).

    Images are resized with padding to the VLM's image size, as real SmolVLA does to 512x512.
    `num_steps` flow-matching steps per chunk; `rtc` enables LeRobot's real-time chunking in the
    config (execution horizon 10), as a checkpoint deployed with RTC would carry it.
    """
    import json

    from lerobot.policies import SmolVLAConfig
    from lerobot.policies.rtc import RTCConfig
    from lerobot.policies.smolvla.modeling_smolvla import SmolVLAPolicy

    vlm_config = json.loads((Path(vlm_dir) / "config.json").read_text())
    image_size = int(vlm_config["vision_config"]["image_size"])
    text_layers = int(vlm_config["text_config"]["num_hidden_layers"])
    inputs, outputs, stats = policy_features(cameras, joint_names, joint_names)
    config = SmolVLAConfig(
        input_features=inputs,
        output_features=outputs,
        device="cpu",
        vlm_model_name=str(vlm_dir),
        load_vlm_weights=False,
        chunk_size=chunk_size,
        n_action_steps=n_action_steps or chunk_size,
        num_steps=num_steps,
        resize_imgs_with_padding=(image_size, image_size),
        num_vlm_layers=text_layers,
        tokenizer_max_length=16,
        rtc_config=RTCConfig(enabled=True, execution_horizon=10) if rtc else None,
    )
    torch.manual_seed(seed)
    return with_processors(SmolVLAPolicy(config), config, stats)


def save_checkpoint(tiny: TinyPolicy, directory: str | Path) -> Path:
    """Save policy and processors into one directory, as `lerobot-train` saves `pretrained_model/`."""
    directory = Path(directory)
    tiny.policy.save_pretrained(directory)
    tiny.preprocessor.save_pretrained(directory)
    tiny.postprocessor.save_pretrained(directory)
    return directory


def write_tiny_act(directory: str | Path, **options: Any) -> Path:
    """Build a tiny ACT (`build_tiny_act` options) and save it as a checkpoint in `directory`."""
    return save_checkpoint(build_tiny_act(**options), directory)


def write_tiny_smolvla(directory: str | Path, *, vlm_dir: str | Path | None = None, **options: Any) -> Path:
    """Build a tiny SmolVLA (`build_tiny_smolvla` options) and save it as a checkpoint in `directory`.

    Without `vlm_dir`, a tiny VLM is written into `directory/tiny_vlm` first and the checkpoint's
    `vlm_model_name` points there (an absolute path, as LeRobot stores it).
    """
    directory = Path(directory)
    if vlm_dir is None:
        vlm_dir = write_tiny_vlm(directory / VLM_DIR_NAME)
    return save_checkpoint(build_tiny_smolvla(Path(vlm_dir).resolve(), **options), directory)
