"""The compiled SmolVLA runtime: as exact as PyTorch at fp32, cached by content, refused where it cannot run.

The tiny SmolVLA checkpoint is exported through the real path (`PolicyRunner.load` with
--policy.runtime=openvino or onnxruntime), run by the real OpenVINO and ONNX Runtime, and compared
with LeRobot's PyTorch model on the same observations and the same noise, in degrees. The graphs are
exported once per checkpoint and configuration into the session's cache (conftest.py); the tests of
the cache itself use a private one.
"""

import shutil
from pathlib import Path

import numpy as np
import pytest
import safetensors.torch
import torch

from policies.compiled.build import refuse_unfit
from policies.compiled.cache import CACHE_ENV, checkpoint_digest
from policies.compiled.cpu import CpuFacts, read_cpu
from policies.compiled.options import PolicyRuntime, WeightPrecision
from policies.contract import RigSpec
from policies.errors import RuntimeChoiceError
from policies.runner import PolicyOptions, PolicyRunner
from policies.testing.tiny_policies import TEST_CAMERAS, write_tiny_smolvla
from tests.support.checkpoints import copy_checkpoint

RIG = RigSpec(cameras={name: (height, width) for name, height, width in TEST_CAMERAS})
FP32_TOLERANCE_DEG = 1e-3  # the bound, max abs over every action of every chunk
OBSERVATIONS = 4


def load(directory: Path, **options):
    runner = PolicyRunner(PolicyOptions(path=str(directory), **options))
    return runner.load(runner.check(RIG))


def predictor(directory: Path, **options):
    return load(directory, **options).predictor


def chunks(predictor_, make_input, **options) -> list[np.ndarray]:
    out = []
    for seed in range(OBSERVATIONS):
        torch.manual_seed(seed)  # the same flow-matching noise on both sides
        out.append(predictor_.predict_chunk(make_input(seed), **options))
    return out


@pytest.fixture(scope="module")
def reference(tiny_smolvla_dir) -> object:
    return predictor(tiny_smolvla_dir)


@pytest.mark.parametrize("runtime", [PolicyRuntime.OPENVINO, PolicyRuntime.ONNXRUNTIME])
@pytest.mark.slow
def test_fp32_graphs_give_pytorchs_actions_within_a_thousandth_of_a_degree(
    runtime, tiny_smolvla_dir, reference, make_input, cache_root
):
    expected = chunks(reference, make_input)
    loaded = load(tiny_smolvla_dir, runtime=runtime)
    compiled = chunks(loaded.predictor, make_input)
    assert loaded.compiled.runtime is runtime  # the graphs really were built and run
    assert len(list(cache_root.glob("*/fp32/prefix.onnx"))) >= 1
    # fp32 means f32 on every CPU: OpenVINO's plugin picks bf16 by itself where the CPU has it.
    assert loaded.compiled.inference_precision == "f32"
    worst = max(float(np.abs(a - b).max()) for a, b in zip(compiled, expected, strict=True))
    assert worst <= FP32_TOLERANCE_DEG, f"{runtime}: {worst:.2e} degrees from PyTorch"
    # The bound means something only if the chunks vary with what the policy sees.
    assert float(np.abs(expected[0] - expected[1]).max()) > 100 * FP32_TOLERANCE_DEG


@pytest.mark.slow
def test_the_graphs_are_built_once_per_content_and_found_again_from_a_copy(tiny_smolvla_dir, tmp_path, private_cache):
    cache_root = private_cache
    predictor(tiny_smolvla_dir, runtime=PolicyRuntime.ONNXRUNTIME)
    entries = sorted(cache_root.iterdir())
    assert [entry.name for entry in entries] == [checkpoint_digest(tiny_smolvla_dir)]
    built = entries[0] / "fp32" / "prefix.onnx"
    first_mtime = built.stat().st_mtime_ns

    moved = copy_checkpoint(tiny_smolvla_dir, tmp_path / "elsewhere")
    predictor(moved, runtime=PolicyRuntime.OPENVINO)  # same content, other path and runtime: reused
    assert sorted(cache_root.iterdir()) == entries
    assert built.stat().st_mtime_ns == first_mtime

    weights = moved / "model.safetensors"  # retrained in place: new content, new graphs
    tensors = safetensors.torch.load_file(weights)
    name = next(key for key in tensors if key.endswith("action_out_proj.bias"))
    tensors[name] = tensors[name] + 1.0
    safetensors.torch.save_file(tensors, weights, metadata={"format": "pt"})
    predictor(moved, runtime=PolicyRuntime.ONNXRUNTIME)
    assert len(list(cache_root.iterdir())) == 2


@pytest.mark.parametrize("stage", ["export_graphs", "quantize_int8"])
def test_an_interrupted_build_leaves_nothing_a_later_run_trusts(
    tiny_smolvla_dir, shared_cache, private_cache, monkeypatch, stage
):
    import policies.compiled.cache as cache

    if stage == "quantize_int8":  # int8 quantizes the cached fp32 graphs: the session's, copied in
        monkeypatch.setenv(CACHE_ENV, str(shared_cache))
        predictor(tiny_smolvla_dir, runtime=PolicyRuntime.ONNXRUNTIME)
        monkeypatch.setenv(CACHE_ENV, str(private_cache))
        entry = checkpoint_digest(tiny_smolvla_dir)
        shutil.copytree(shared_cache / entry / "fp32", private_cache / entry / "fp32")

    def fail_half_written(*args, **kwargs):  # a Ctrl-C after the first graph's file was written
        target = Path(args[1])
        folder = target if target.suffix != ".onnx" else target.parent
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "prefix.onnx").write_bytes(b"half")
        raise KeyboardInterrupt

    monkeypatch.setattr(cache, stage, fail_half_written)
    with pytest.raises(KeyboardInterrupt):
        predictor(tiny_smolvla_dir, runtime=PolicyRuntime.ONNXRUNTIME, precision=WeightPrecision.INT8)
    assert list(private_cache.glob("*/int8/prefix.onnx")) == []  # neither the half build nor a staging folder
    assert list(private_cache.glob("*/.*")) == []


@pytest.mark.slow
def test_int8_weights_are_quantized_and_their_deviation_is_finite(tiny_smolvla_dir, reference, make_input, cache_root):
    import onnx

    quantized = predictor(tiny_smolvla_dir, runtime=PolicyRuntime.ONNXRUNTIME, precision=WeightPrecision.INT8)
    folder = next(cache_root.glob("*/int8"))
    for name in ("prefix.onnx", "denoise.onnx"):
        by_type = {"int8": 0, "float": 0}
        for tensor in onnx.load(str(folder / name)).graph.initializer:
            kind = {onnx.TensorProto.INT8: "int8", onnx.TensorProto.FLOAT: "float"}.get(tensor.data_type)
            if kind:
                by_type[kind] += int(np.prod(tensor.dims))
        assert by_type["int8"] > by_type["float"], (name, by_type)  # most weights really are 8-bit
    pairs = zip(chunks(quantized, make_input), chunks(reference, make_input), strict=True)
    deviation = [np.abs(a - b).max() for a, b in pairs]
    assert all(np.isfinite(deviation))
    assert max(deviation) > 0


@pytest.mark.slow
def test_fewer_flow_steps_change_the_chunk_on_either_runtime(tiny_smolvla_dir, reference, make_input):
    full = chunks(reference, make_input)
    for runtime in (PolicyRuntime.TORCH, PolicyRuntime.ONNXRUNTIME):
        one_step = chunks(predictor(tiny_smolvla_dir, runtime=runtime, flow_steps=1), make_input)
        assert float(np.abs(one_step[0] - full[0]).max()) > 100 * FP32_TOLERANCE_DEG
    torch_one = chunks(predictor(tiny_smolvla_dir, flow_steps=1), make_input)
    compiled_one = chunks(predictor(tiny_smolvla_dir, runtime=PolicyRuntime.OPENVINO, flow_steps=1), make_input)
    assert max(float(np.abs(a - b).max()) for a, b in zip(torch_one, compiled_one, strict=True)) <= FP32_TOLERANCE_DEG


@pytest.mark.slow
def test_rtc_guidance_runs_on_the_compiled_prefix_as_on_pytorch(tmp_path_factory, tiny_vlm_dir, make_input):
    folder = tmp_path_factory.mktemp("rtc") / "smolvla"
    rtc_dir = write_tiny_smolvla(folder, vlm_dir=tiny_vlm_dir, chunk_size=20, rtc=True)
    results = {}
    for runtime in (PolicyRuntime.TORCH, PolicyRuntime.OPENVINO):
        chunk_predictor = predictor(rtc_dir, runtime=runtime)
        torch.manual_seed(0)
        first = chunk_predictor.predict_chunk(make_input())
        torch.manual_seed(1)
        guided = chunk_predictor.predict_chunk(make_input(), inference_delay=3, leftover=first[5:])
        torch.manual_seed(1)
        unguided = chunk_predictor.predict_chunk(make_input())
        results[runtime] = (guided, unguided)
    torch_guided, torch_unguided = results[PolicyRuntime.TORCH]
    compiled_guided, _ = results[PolicyRuntime.OPENVINO]
    assert not np.allclose(torch_guided, torch_unguided)  # the leftover guides the chunk
    assert float(np.abs(compiled_guided - torch_guided).max()) <= FP32_TOLERANCE_DEG


@pytest.mark.slow
def test_bf16_is_what_the_compiled_graphs_compute_and_deviates_more_than_fp32(tiny_smolvla_dir, reference, make_input):
    if not read_cpu().native_bf16:
        pytest.skip(f"{read_cpu().name} has no native bf16 (avx512_bf16 or amx_bf16): bf16 is refused here")
    loaded = load(tiny_smolvla_dir, runtime=PolicyRuntime.OPENVINO, precision=WeightPrecision.BF16)
    assert loaded.compiled.inference_precision == "bf16"
    pairs = zip(chunks(loaded.predictor, make_input), chunks(reference, make_input), strict=True)
    worst = max(float(np.abs(a - b).max()) for a, b in pairs)
    assert np.isfinite(worst)
    assert worst > FP32_TOLERANCE_DEG  # it really computed in bf16 (8 mantissa bits), not f32


@pytest.mark.parametrize(
    ("runtime", "cpu", "message"),
    [
        (PolicyRuntime.ONNXRUNTIME, None, "computed by OpenVINO.*--policy.runtime=openvino --policy.precision=bf16"),
        (PolicyRuntime.TORCH, None, "not --policy.runtime=torch"),
        (
            PolicyRuntime.OPENVINO,
            CpuFacts("AMD EPYC 7B13", frozenset({"avx2", "fma", "avx512f"})),
            r"needs a CPU with native bf16 \(avx512_bf16 or amx_bf16.*AMD EPYC 7B13 has neither.*precision=fp32",
        ),
    ],
)
def test_bf16_where_it_cannot_run_is_refused_in_one_line(tiny_smolvla_dir, runtime, cpu, message):
    with pytest.raises(RuntimeChoiceError, match=message) as refused:
        refuse_unfit(runtime, WeightPrecision.BF16, "smolvla", object(), tiny_smolvla_dir, cpu)
    assert "\n" not in str(refused.value)


def test_the_cpu_facts_come_from_the_first_processors_block(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8488C\nflags\t\t: fpu avx2 amx_bf16 amx_tile\n\n"
        "processor\t: 1\nmodel name\t: other\nflags\t\t: fpu\n"
    )
    facts = read_cpu(cpuinfo)
    assert facts.name == "Intel(R) Xeon(R) Platinum 8488C"
    assert facts.native_bf16
    assert not read_cpu(tmp_path / "missing").native_bf16


def test_an_act_checkpoint_is_refused_before_its_weights_load(tiny_act_dir):
    runner = PolicyRunner(PolicyOptions(path=str(tiny_act_dir), runtime=PolicyRuntime.OPENVINO))
    with pytest.raises(RuntimeChoiceError, match=r"compiles SmolVLA checkpoints only.*--policy.runtime=torch"):
        runner.check(RIG)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"precision": WeightPrecision.INT8}, "add --policy.runtime=openvino"),
        ({"runtime": PolicyRuntime.OPENVINO, "device": "cuda"}, "runs on the CPU"),
        ({"flow_steps": 0}, "1 or more flow-matching steps"),
        ({"threads": 0}, "--policy.threads=0"),
    ],
)
def test_options_that_cannot_work_are_refused_with_the_fix(tiny_smolvla_dir, options, message):
    with pytest.raises(RuntimeChoiceError, match=message):
        PolicyRunner(PolicyOptions(path=str(tiny_smolvla_dir), **options)).check(RIG)


def test_flow_steps_on_act_are_refused(tiny_act_dir):
    with pytest.raises(RuntimeChoiceError, match="holds a act policy"):
        PolicyRunner(PolicyOptions(path=str(tiny_act_dir), flow_steps=5)).check(RIG)


def test_a_cache_root_that_cannot_be_written_is_one_clear_error(tiny_smolvla_dir, tmp_path, private_cache, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv(CACHE_ENV, str(blocked / "compiled"))
    with pytest.raises(RuntimeChoiceError, match=f"cannot be cached in {blocked}.*export {CACHE_ENV}="):
        predictor(tiny_smolvla_dir, runtime=PolicyRuntime.ONNXRUNTIME)
