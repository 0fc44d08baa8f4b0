"""A signal after OpenVINO graphs were released still reaches its handler (no SIGSEGV).

OpenVINO's CPU plugin installs an alternate signal stack on the thread that creates it and frees it
with the plugin; `policies.compiled.sessions.openvino_core` keeps one plugin for the process. The
check runs in a child interpreter: the failure it guards against kills the process.
"""

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import gc, signal, sys
from pathlib import Path
import numpy as np
from onnx import TensorProto, helper, save
from policies.compiled.options import WeightPrecision
from policies.compiled.sessions import OpenVinoSession

folder = Path(sys.argv[1])
graph = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["y"])], "relu",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
)
save(helper.make_model(graph), folder / "relu.onnx")
fp32 = WeightPrecision.FP32
prefix = OpenVinoSession(folder / "relu.onnx", None, folder / "cache", fp32)  # as CompiledSmolVLA opens its two
denoise = OpenVinoSession(folder / "relu.onnx", None, folder / "cache", fp32)
assert prefix.run({"x": np.array([-1.0, 2.0], np.float32)})[0].tolist() == [0.0, 2.0]
del prefix, denoise
gc.collect()
signal.signal(signal.SIGTERM, lambda signum, frame: print("handled", flush=True))
signal.raise_signal(signal.SIGTERM)
print("after", flush=True)
"""


def test_sigterm_after_the_graphs_are_released_reaches_its_handler(tmp_path: Path):
    repo = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True, cwd=repo, timeout=120
    )
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    assert done.stdout.split() == ["handled", "after"]
