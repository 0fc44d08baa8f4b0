"""Export a loaded SmolVLA's two graphs to ONNX files (and, for int8, quantize their weights).

The shapes are fixed at export: the checkpoint's cameras at its `resize_imgs_with_padding` size,
its `tokenizer_max_length` language tokens (the runner pads the task's tokens to it, masked out),
its `chunk_size` x `max_action_dim` actions, batch 1. Fixed shapes let OpenVINO plan the whole
graph once. PyTorch's `torch.export`-based exporter is used: the TorchScript tracer stumbles on
transformers' mask helpers, which take traced sizes for tensors.
"""

import contextlib
import io
import logging
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from policies.compiled.graphs import (
    DENOISE_INPUTS,
    DENOISE_OUTPUTS,
    PREFIX_INPUTS,
    PREFIX_OUTPUTS,
    DenoiseGraph,
    PrefixGraph,
)

PREFIX_FILE = "prefix.onnx"
DENOISE_FILE = "denoise.onnx"
OPSET = 18


def example_prefix_inputs(config: Any) -> tuple[torch.Tensor, ...]:
    """Inputs of the prefix graph's shapes for a SmolVLA `config` (values do not matter to the export)."""
    width, height = config.resize_imgs_with_padding
    cameras = len(config.image_features)
    tokens = int(config.tokenizer_max_length)
    return (
        torch.zeros(cameras, 1, 3, height, width),
        torch.ones(cameras, 1, dtype=torch.bool),
        torch.zeros(1, tokens, dtype=torch.int64),
        torch.ones(1, tokens, dtype=torch.bool),
        torch.zeros(1, int(config.max_state_dim)),
    )


def export_graphs(policy: Any, directory: Path, *, on_stage: Callable[[str], None] = lambda stage: None) -> None:
    """Write `PREFIX_FILE` and `DENOISE_FILE` for the SmolVLA `policy` (on the CPU, fp32) into `directory`."""
    model = policy.model.eval()
    config = policy.config
    prefix_inputs = example_prefix_inputs(config)
    with torch.no_grad():
        on_stage("tracing the vision encoder and VLM prefix")
        prefix = PrefixGraph(model)
        pad_masks, keys, values = prefix(*prefix_inputs)
        _export(prefix, prefix_inputs, directory / PREFIX_FILE, PREFIX_INPUTS, PREFIX_OUTPUTS)
        on_stage("tracing one flow-matching step")
        x_t = torch.zeros(1, int(config.chunk_size), int(config.max_action_dim))
        denoise_inputs = (pad_masks, keys, values, x_t, torch.ones(1))
        _export(DenoiseGraph(model), denoise_inputs, directory / DENOISE_FILE, DENOISE_INPUTS, DENOISE_OUTPUTS)


def quantize_int8(source: Path, target: Path) -> None:
    """`source` with its MatMul and Gemm weights in 8 bits per output channel (activations stay float)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # The exporter's recorded intermediate shapes trip the quantizer's own shape inference on a
    # reshape it reads differently; without them it infers every shape afresh.
    model = onnx.load(str(source))
    del model.graph.value_info[:]
    bare = target.with_name(f"bare-{target.name}")
    onnx.save(model, str(bare), save_as_external_data=True, location=f"{bare.name}.data")
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # its advice to pre-process shapes, logged every time, is nothing a user can act on
    try:
        quantize_dynamic(
            bare,
            target,
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul", "Gemm"],
            use_external_data_format=True,
        )
    finally:
        root.setLevel(level)
    bare.unlink()
    (bare.parent / f"{bare.name}.data").unlink()


def _export(module: torch.nn.Module, inputs: tuple, path: Path, names_in, names_out) -> None:
    # The exporter narrates every pass on stdout and warns about deprecations we cannot act on; the
    # caller shows a progress bar instead. An exception still carries the whole story.
    quiet = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(quiet), _quiet_loggers():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(
            module,
            inputs,
            input_names=list(names_in),
            output_names=list(names_out),
            dynamo=True,
            opset_version=OPSET,
            verbose=False,
            external_data=True,
        )
        program.save(str(path), external_data=True)


@contextlib.contextmanager
def _quiet_loggers():
    names = ("torch.onnx", "onnxscript", "torch.export", "torch._dynamo")
    levels = {name: logging.getLogger(name).level for name in names}
    for name in names:
        logging.getLogger(name).setLevel(logging.ERROR)
    try:
        yield
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
