"""What `--policy.runtime` and its options name: which engine runs a SmolVLA chunk, and at what precision."""

from enum import StrEnum


class PolicyRuntime(StrEnum):
    """Who runs the policy's forward pass (LeRobot's processors run in PyTorch either way)."""

    TORCH = "torch"  # LeRobot's own model, as lerobot-rollout runs it
    OPENVINO = "openvino"  # SmolVLA's prefix and denoise graphs, compiled by OpenVINO for this CPU
    ONNXRUNTIME = "onnxruntime"  # the same graphs, run by ONNX Runtime

    @property
    def compiled(self) -> bool:
        """Whether the checkpoint is exported to graphs first (SmolVLA only)."""
        return self is not PolicyRuntime.TORCH


class WeightPrecision(StrEnum):
    """How the compiled graphs compute: fp32 matches PyTorch to ~1e-5; bf16 and int8 trade a deviation for speed.

    Each is set explicitly: OpenVINO's CPU plugin otherwise picks bf16 by itself on a CPU with native
    bf16 (AVX512_BF16 or AMX), so an unstated fp32 ran bf16 there, 15 degrees from PyTorch.
    """

    FP32 = "fp32"
    BF16 = "bf16"  # the fp32 graphs, computed by OpenVINO in bfloat16 (CPUs with avx512_bf16 or amx_bf16 only)
    INT8 = "int8"  # matrix weights quantized to 8 bits per output channel (ONNX Runtime's dynamic quantization)

    @property
    def graphs(self) -> "WeightPrecision":
        """The graph files this precision runs: bf16 is a way of computing the fp32 graphs, not a file of its own."""
        return WeightPrecision.INT8 if self is WeightPrecision.INT8 else WeightPrecision.FP32

    @property
    def openvino_hint(self) -> str:
        """OpenVINO's INFERENCE_PRECISION_HINT for it: f32 keeps the non-quantized parts of int8 exact too."""
        return "bf16" if self is WeightPrecision.BF16 else "f32"
