"""SmolVLA on a CPU without PyTorch's per-op overhead: two exported graphs run by OpenVINO or ONNX Runtime."""
