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
    """The compiled graphs' weights: fp32 matches PyTorch to ~1e-5; int8 trades a measured deviation for speed."""

    FP32 = "fp32"
    INT8 = "int8"  # matrix weights quantized to 8 bits per output channel (ONNX Runtime's dynamic quantization)
