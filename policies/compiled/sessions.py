"""One exported graph, loaded by OpenVINO or ONNX Runtime, behind one small protocol.

Both read the same ONNX file; they differ in how they plan it for this CPU. `threads` is the
intra-op thread count of each graph (the two graphs never run at once); None lets the runtime use
every core. `precision` is how the graph computes: OpenVINO is told it explicitly (its CPU plugin
picks bf16 by itself where the CPU has it), and `inference_precision` reads back what it compiled.
"""

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from policies.compiled.options import PolicyRuntime, WeightPrecision


class GraphSession(Protocol):
    """A compiled graph: named numpy inputs in, outputs out in the graph's output order."""

    input_names: Sequence[str]
    inference_precision: str  # what the runtime computes in, as it reports it: f32, bf16

    def run(self, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """Run the graph once on `feeds` (only the names in `input_names` are read)."""
        ...


class OnnxRuntimeSession:
    """A graph run by ONNX Runtime's CPU provider, all graph optimizations on."""

    def __init__(self, path: Path, threads: int | None) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        options.log_severity_level = 3  # warnings about unused initializers are noise to a user
        self._session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.input_names = [i.name for i in self._session.get_inputs()]
        self.inference_precision = "f32"  # its CPU provider computes float graphs in float32 only

    def run(self, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """The graph's outputs for `feeds`."""
        return self._session.run(None, {name: feeds[name] for name in self.input_names})


class OpenVinoSession:
    """A graph compiled by OpenVINO for this CPU at `precision` (its compiled blob cached in `cache_dir`)."""

    def __init__(self, path: Path, threads: int | None, cache_dir: Path, precision: WeightPrecision) -> None:
        core = openvino_core()
        self.config: dict[str, object] = {
            "CACHE_DIR": str(cache_dir),
            "PERFORMANCE_HINT": "LATENCY",
            "INFERENCE_PRECISION_HINT": precision.openvino_hint,
        }
        if threads:
            self.config["INFERENCE_NUM_THREADS"] = threads
        self._compiled = core.compile_model(str(path), "CPU", self.config)
        self._request = self._compiled.create_infer_request()
        # A graph input that the exporter found unused is dropped: read the names the graph kept.
        self.input_names = [port.any_name for port in self._compiled.inputs]
        # The compiled model's own word, not the request: the test of each precision reads this.
        self.inference_precision = self._compiled.get_property("INFERENCE_PRECISION_HINT").to_string()

    def run(self, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """The graph's outputs for `feeds`."""
        results = self._request.infer({name: feeds[name] for name in self.input_names})
        return [np.asarray(results[port]) for port in self._compiled.outputs]


@functools.cache
def openvino_core() -> Any:
    """The process's one OpenVINO `Core`, never released.

    Creating a Core's CPU plugin installs an alternate signal stack on the calling thread, and
    releasing the plugin frees that memory without uninstalling it. Once two Cores (one per graph)
    had been made and released, the next signal handled on that thread ran on freed memory and the
    process died of SIGSEGV: the suite's signal tests did, after the compiled-runtime tests, and a
    command would skip its safe exit. One Core kept for the process's life keeps the stack valid.
    """
    import openvino as ov

    return ov.Core()


def open_session(runtime: PolicyRuntime, path: Path, threads: int | None, precision: WeightPrecision) -> GraphSession:
    """`path` loaded by `runtime` (a compiled one), computing at `precision`."""
    if runtime is PolicyRuntime.OPENVINO:
        return OpenVinoSession(path, threads, path.parent / "openvino_cache", precision)
    if runtime is PolicyRuntime.ONNXRUNTIME:
        if precision is WeightPrecision.BF16:
            raise ValueError("ONNX Runtime's CPU provider has no bf16 path (build.refuse_unfit says so first)")
        return OnnxRuntimeSession(path, threads)
    raise ValueError(f"{runtime} is not a compiled runtime")
