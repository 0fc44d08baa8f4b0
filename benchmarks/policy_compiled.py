"""Full-size SmolVLA on the CPU: LeRobot's PyTorch against our compiled runtime, same weights, same inputs.

    parent: write a full-size SmolVLA checkpoint (random weights, seed 0; SmolVLM2-500M's dimensions,
            three 512x512 cameras), record 1 episode with so101-record on the virtual rig (three
            512x512 cameras), read its first --observations frames back through LeRobotDataset;
            build each variant's compiled graphs once (timed: the first-use cost)
    for each variant, a fresh child process (this file with --child), same checkpoint, same frames:
        lerobot:      LeRobot's own path (from_pretrained + make_pre_post_processors, predict_action)
        torch:        ours, PyTorch fp32 (LeRobotPredictor): the deviation reference
        openvino, onnxruntime (fp32, int8), and the options (flow steps, threads) on the fastest one
        W warm-up + N timed chunks on observation 0: median, p95, prefix and per-step times, peak RSS;
        then one chunk per observation with torch.manual_seed(i) (the same flow noise everywhere),
        saved for the parent
    parent: deviation of every variant's actions from PyTorch fp32, in degrees (max and mean abs over
            every action of every observation's chunk); a Markdown table; JSON; `summary` rows
    CUDA (when torch sees one): PyTorch eager and torch.compile chunk latency (absolute); the
            compiled runtime has no CUDA path (ONNX Runtime's CPU build, OpenVINO targets Intel GPUs)

Prefix / per-step times of PyTorch are its PrefixGraph and DenoiseGraph (policies/compiled/graphs.py)
called in PyTorch: the same computation, split where the compiled runtime splits it.

    .venv/bin/python -m benchmarks.policy_compiled                     # all variants, 100 observations (~40 min)
    .venv/bin/python -m benchmarks.policy_compiled --quick             # 5 observations, 1 + 2 chunks (~10 min)
    .venv/bin/python -m benchmarks.policy_compiled --only torch,openvino-int8 --observations 20
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.json_child import run_json_child
from benchmarks.summary import Row

SIZE = 512  # the cameras' frames and SmolVLA's input, pixels (square)
CAMERAS = (("left_wrist", SIZE, SIZE), ("right_wrist", SIZE, SIZE), ("overhead", SIZE, SIZE))
TASK = "Fold the cloth"
REFERENCE = "torch"  # the variant every deviation is measured from


@dataclass(frozen=True)
class Variant:
    """One way of running the checkpoint."""

    name: str
    runtime: str  # lerobot | torch | openvino | onnxruntime
    precision: str = "fp32"
    flow_steps: int | None = None
    threads: int | None = None

    @property
    def compiled(self) -> bool:
        """Whether it runs exported graphs."""
        return self.runtime in ("openvino", "onnxruntime")


VARIANTS = (
    Variant("lerobot", "lerobot"),
    Variant("torch", "torch"),
    Variant("onnxruntime", "onnxruntime"),
    Variant("openvino", "openvino"),
    Variant("openvino-bf16", "openvino", "bf16"),  # CPUs with native bf16 only (skipped elsewhere, said so)
    Variant("onnxruntime-int8", "onnxruntime", "int8"),
    Variant("openvino-int8", "openvino", "int8"),
    Variant("openvino-int8-5steps", "openvino", "int8", flow_steps=5),
    Variant("openvino-int8-1thread", "openvino", "int8", threads=1),
)
CALLS = (1, 5)  # warm-up, timed chunks on observation 0
QUICK_CALLS = (1, 2)


# --- the child ---------------------------------------------------------------------------


def rss_peak_mb() -> float:
    """This process's peak resident set, MB (loading included).

    VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so a child would report its parent's
    peak (the parent loads the model to build the graphs).
    """
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_child(variant: Variant, checkpoint: Path, frames: Path, out: Path, warmup: int, calls: int) -> dict:
    """Load `checkpoint` as `variant`, time chunks, then one chunk per observation into `out` (.npy)."""
    import torch

    data = np.load(frames)
    states, images = data["states"], {name: data[name] for name, _, _ in CAMERAS}
    threads = variant.threads or (os.cpu_count() or 1)
    torch.set_num_threads(threads)
    started = time.perf_counter()
    chunk, timing = _loader(variant, checkpoint, threads)
    load_s = time.perf_counter() - started
    samples, prefixes, steps = [], [], []
    for index in range(warmup + calls):
        begin = time.perf_counter()
        chunk(states[0], {name: frames_[0] for name, frames_ in images.items()}, None)
        samples.append(time.perf_counter() - begin)
        if index >= warmup and timing() is not None:
            prefix_s, steps_s = timing()
            prefixes.append(prefix_s)
            steps.extend(steps_s)
    if variant.runtime != "lerobot":  # LeRobot's path is timed only: its actions are our torch variant's
        chunks = [
            chunk(states[i], {name: frames_[i] for name, frames_ in images.items()}, i) for i in range(len(states))
        ]
        np.save(out, np.stack(chunks))
    timed = samples[warmup:]
    return {
        "variant": asdict(variant),
        "threads": threads,
        "load_s": load_s,
        "first_chunk_s": samples[0],
        "median_s": float(np.median(timed)),
        "p95_s": float(np.percentile(timed, 95)),
        "samples_s": samples,
        "prefix_median_s": float(np.median(prefixes)) if prefixes else None,
        "step_median_s": float(np.median(steps)) if steps else None,
        "steps_per_chunk": len(steps) // max(1, len(prefixes)) if steps else None,
        "peak_rss_mb": rss_peak_mb(),
    }


def _loader(variant: Variant, checkpoint: Path, threads: int):
    """(chunk(state, images, seed or None) -> (chunk, 12) degrees, timing() -> (prefix_s, steps_s) or None)."""
    import torch

    if variant.runtime == "lerobot":
        return _lerobot_loader(checkpoint)
    from policies.compiled.options import PolicyRuntime, WeightPrecision
    from policies.contract import RigSpec
    from policies.engine import PolicyInput
    from policies.runner import PolicyOptions, PolicyRunner

    options = PolicyOptions(
        path=str(checkpoint),
        device="cpu",
        runtime=PolicyRuntime(variant.runtime),
        precision=WeightPrecision(variant.precision),
        flow_steps=variant.flow_steps,
        threads=threads,
    )
    runner = PolicyRunner(options)
    loaded = runner.load(runner.check(RigSpec(cameras={name: (h, w) for name, h, w in CAMERAS})))
    split = None if loaded.compiled else _torch_split(loaded.predictor)

    def chunk(state: np.ndarray, images: dict, seed: int | None) -> np.ndarray:
        if seed is not None:
            torch.manual_seed(seed)
        return loaded.predictor.predict_chunk(PolicyInput(state=state, images=images, task=TASK, time_s=0.0))

    def timing() -> tuple[float, tuple[float, ...]] | None:
        if loaded.compiled is not None:
            last = loaded.compiled.last_timing
            return (last.prefix_s, last.steps_s) if last else None
        return split.last if split else None

    return chunk, timing


class _TorchSplit:
    """PyTorch's prefix (image and language embedding, VLM fill) and per-step times, timed where the graphs split."""

    def __init__(self, model: Any) -> None:
        self.last: tuple[float, tuple[float, ...]] | None = None
        self._steps: list[float] = []
        self._prefix_s = 0.0
        self._prefix_start = 0.0
        embed, forward, denoise = model.embed_prefix, model.vlm_with_expert.forward, model.denoise_step

        def timed_embed(*args: Any, **kwargs: Any) -> Any:
            self._prefix_start = time.perf_counter()  # the vision tower runs in here
            return embed(*args, **kwargs)

        def timed_forward(*args: Any, **kwargs: Any) -> Any:
            result = forward(*args, **kwargs)
            if kwargs.get("past_key_values") is None:  # the prefix fill, not a step's call
                self._prefix_s, self._steps = time.perf_counter() - self._prefix_start, []
            return result

        def timed_denoise(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            result = denoise(*args, **kwargs)
            self._steps.append(time.perf_counter() - started)
            self.last = (self._prefix_s, tuple(self._steps))
            return result

        model.embed_prefix = timed_embed
        model.vlm_with_expert.forward = timed_forward
        model.denoise_step = timed_denoise


def _torch_split(predictor: Any) -> _TorchSplit:
    return _TorchSplit(predictor._loaded.policy.model)


def _lerobot_loader(checkpoint: Path):
    import torch
    from lerobot.common.control_utils import predict_action
    from lerobot.configs import PreTrainedConfig
    from lerobot.policies import get_policy_class, make_pre_post_processors

    config = PreTrainedConfig.from_pretrained(checkpoint)
    config.device = "cpu"
    model = get_policy_class(config.type).from_pretrained(checkpoint, config=config)
    pre, post = make_pre_post_processors(
        config, pretrained_path=str(checkpoint), preprocessor_overrides={"device_processor": {"device": "cpu"}}
    )
    device = torch.device("cpu")

    def chunk(state: np.ndarray, images: dict, seed: int | None) -> np.ndarray:
        if seed is not None:
            torch.manual_seed(seed)
        frame = {"observation.state": state} | {f"observation.images.{k}": v for k, v in images.items()}
        model.reset()  # an empty queue: select_action computes the whole chunk, as at a chunk boundary
        return predict_action(frame, model, device, pre, post, False, TASK, "bi_so_follower").numpy()

    return chunk, lambda: None


# --- the parent --------------------------------------------------------------------------


def build_checkpoint(directory: Path, cameras: tuple[tuple[str, int, int], ...] = CAMERAS) -> int:
    """Full-size SmolVLA (in `directory`/smolvla) for `cameras` (name, height, width); its parameter count."""
    from benchmarks.policy_cpu import save_smolvla
    from policies.testing.tiny_policies import policy_features
    from robot.joints import BIMANUAL_KEYS

    return save_smolvla(directory, *policy_features(cameras, BIMANUAL_KEYS, BIMANUAL_KEYS))


def record_frames(scratch: Path, count: int) -> Path:
    """`count` observations (state, three SIZE x SIZE frames) of an so101-record episode on the virtual rig."""
    import yaml

    rig = yaml.safe_load(Path("hardware_configs/virtual.yaml").read_text())
    for camera in rig["cameras"]:
        camera["width"] = camera["height"] = SIZE
    rig["virtual"]["runtime_dir"] = str(scratch / "rig")
    rig["virtual"]["calibrated"] = True  # the emulated arms come calibrated: no so101-calibrate first
    rig["calibration"]["dir"] = str(scratch / "calibration")
    rig_file = scratch / "rig.yaml"
    rig_file.write_text(yaml.safe_dump(rig))
    root = scratch / "dataset"
    episode_s = count / rig["fps"] + 2.0
    command = [
        str(Path(sys.executable).parent / "so101-record"),
        f"--config_path={rig_file}",
        "--dataset.repo_id=bench/smolvla_inputs",
        f"--dataset.root={root}",
        "--session.num_episodes=1",
        f"--session.episode_s={episode_s}",
        "--gates.min_fps=10",
        "--gates.max_period_error_p99_ms=500",
        "--gates.max_skew_p99_ms=500",
    ]
    done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
    if done.returncode != 0:
        raise SystemExit(f"so101-record failed (exit {done.returncode}): {done.stderr[-2000:]}")
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    dataset = LeRobotDataset("bench/smolvla_inputs", root=root, video_backend="pyav")
    count = min(count, len(dataset))
    states, images = [], {name: [] for name, _, _ in CAMERAS}
    for index in range(count):
        item = dataset[index]
        states.append(item["observation.state"].numpy().astype(np.float32))
        for name in images:
            chw = item[f"observation.images.{name}"].numpy()  # float CHW in [0, 1]
            images[name].append((chw.transpose(1, 2, 0) * 255).round().astype(np.uint8))
    frames = scratch / "frames.npz"
    np.savez(frames, states=np.stack(states), **{name: np.stack(v) for name, v in images.items()})
    return frames


def child(arguments: list[str]) -> dict:
    """This file with `arguments` in a fresh interpreter: its JSON result."""
    return run_json_child("benchmarks.policy_compiled", arguments)


def build_graphs(precision: str, checkpoint: Path) -> float:
    """Build the checkpoint's graphs at `precision` into the cache (the first-use cost a user pays once); s."""
    from policies.checkpoint import load_policy, read_checkpoint
    from policies.compiled.cache import compiled_graphs
    from policies.compiled.options import WeightPrecision

    loaded = load_policy(read_checkpoint(str(checkpoint)), "cpu")
    started = time.perf_counter()
    compiled_graphs(loaded.policy, checkpoint, WeightPrecision(precision))
    return time.perf_counter() - started


def deviations(results: dict[str, dict], chunks_dir: Path) -> None:
    """Max and mean |action - PyTorch fp32's| in degrees, over every observation's chunk, into each result."""
    reference = np.load(chunks_dir / f"{REFERENCE}.npy")
    for name, result in results.items():
        if result["variant"]["runtime"] == "lerobot":
            continue
        difference = np.abs(np.load(chunks_dir / f"{name}.npy") - reference)
        result["deviation_max_deg"] = float(difference.max())
        result["deviation_mean_deg"] = float(difference.mean())
        result["observations"] = int(reference.shape[0])


def cuda_rows(checkpoint: Path, frames: Path) -> list[dict] | str:
    """PyTorch eager and torch.compile on CUDA, or why they were skipped."""
    import torch

    if not torch.cuda.is_available():
        return "skipped: no CUDA device on this machine"
    return [child(["--cuda", mode, str(checkpoint), str(frames)]) for mode in ("eager", "compile")]


def cuda_only() -> dict:
    """The CUDA rows alone (a GPU machine without the virtual rig): the checkpoint, random frames."""
    with tempfile.TemporaryDirectory(prefix="policy-compiled-cuda-") as scratch_name:
        scratch = Path(scratch_name)
        params = build_checkpoint(scratch)
        rng = np.random.default_rng(0)
        frames = scratch / "frames.npz"
        states = rng.normal(0, 20, (1, 12)).astype(np.float32)
        images = {name: rng.integers(0, 256, (1, h, w, 3), dtype=np.uint8) for name, h, w in CAMERAS}
        np.savez(frames, states=states, **images)
        return {"params": params, "cuda": cuda_rows(scratch / "smolvla", frames)}


def run_cuda(mode: str, checkpoint: Path, frames: Path) -> dict:
    """Chunk latency of PyTorch on the GPU, eager or with torch.compile on the model's sampler."""
    import torch

    from policies.contract import RigSpec
    from policies.engine import PolicyInput
    from policies.runner import PolicyOptions, PolicyRunner

    runner = PolicyRunner(PolicyOptions(path=str(checkpoint), device="cuda"))
    loaded = runner.load(runner.check(RigSpec(cameras={name: (h, w) for name, h, w in CAMERAS})))
    if mode == "compile":
        model = loaded.predictor._loaded.policy.model
        model.sample_actions = torch.compile(model.sample_actions)
    data = np.load(frames)
    inputs = PolicyInput(state=data["states"][0], images={n: data[n][0] for n, _, _ in CAMERAS}, task=TASK, time_s=0.0)
    samples = []
    for _ in range(3 + 10):
        torch.cuda.synchronize()
        begin = time.perf_counter()
        loaded.predictor.predict_chunk(inputs)
        torch.cuda.synchronize()
        samples.append(time.perf_counter() - begin)
    return {
        "mode": mode,
        "first_chunk_s": samples[0],
        "median_s": float(np.median(samples[3:])),
        "p95_s": float(np.percentile(samples[3:], 95)),
        "gpu": torch.cuda.get_device_name(),
    }


def table(results: dict[str, dict]) -> str:
    """One row per variant; speed-up against LeRobot's PyTorch path measured in the same run."""
    anchor = results.get("lerobot", {}).get("median_s")
    lines = [
        "| variant | threads | first use s | chunk median s | p95 s | prefix s | step s x n | peak RSS MB "
        "| vs LeRobot | dev max deg | dev mean deg |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def num(value: float | None, digits: int = 2) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    for name, r in results.items():
        speed = f"{anchor / r['median_s']:.2f}x" if anchor else "-"
        steps = f"{num(r.get('step_median_s'), 3)} x {r.get('steps_per_chunk') or '-'}"
        lines.append(
            f"| {name} | {r['threads']} | {num(r.get('build_s'), 0)} | {num(r['median_s'])} | {num(r['p95_s'])} "
            f"| {num(r.get('prefix_median_s'))} | {steps} | {r['peak_rss_mb']:.0f} | {speed} "
            f"| {num(r.get('deviation_max_deg'), 6)} | {num(r.get('deviation_mean_deg'), 6)} |"
        )
    return "\n".join(lines)


def summary_rows(results: dict[str, dict]) -> list[dict]:
    """Headline rows for benchmarks/summary.py: each compiled variant's chunk latency against LeRobot's."""
    anchor = results.get("lerobot", {}).get("median_s")
    rows = []
    for name, r in results.items():
        if name == "lerobot":
            continue
        target = "<= 1.5 s median (fastest variant)" if name != REFERENCE else ""
        rows.append(
            asdict(Row("policy_compiled", f"SmolVLA chunk median, {name}", "s", r["median_s"], anchor, target=target))
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="", help="comma-separated variant names (default: all)")
    parser.add_argument(
        "--observations", type=int, default=None, help="frames for the deviation (default 100, quick 5)"
    )
    parser.add_argument("--out", type=Path, default=Path("outputs/bench/policy_compiled.json"))
    parser.add_argument("--cuda-only", action="store_true", help="only the CUDA rows, on synthetic frames")
    parser.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    parser.add_argument("--cuda", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.child:
        name, checkpoint, frames, out, warmup, calls = args.child
        variant = next(v for v in VARIANTS if v.name == name)
        print(json.dumps(run_child(variant, Path(checkpoint), Path(frames), Path(out), int(warmup), int(calls))))
        return
    if args.cuda:
        mode, checkpoint, frames = args.cuda
        print(json.dumps(run_cuda(mode, Path(checkpoint), Path(frames))))
        return
    if args.cuda_only:
        print(json.dumps(cuda_only()))
        return
    names = [n for n in args.only.split(",") if n] or [v.name for v in VARIANTS]
    variants = [v for v in VARIANTS if v.name in names]
    if REFERENCE not in names:
        variants.insert(0, next(v for v in VARIANTS if v.name == REFERENCE))
    from policies.compiled.cpu import read_cpu
    from policies.compiled.options import WeightPrecision

    cpu = read_cpu()
    if not cpu.native_bf16 and any(v.precision == "bf16" for v in variants):
        print(f"{cpu.name} has no native bf16: the bf16 variants are skipped", file=sys.stderr)
        variants = [v for v in variants if v.precision != "bf16"]
    warmup, calls = QUICK_CALLS if args.quick else CALLS
    observations = args.observations or (5 if args.quick else 100)
    with tempfile.TemporaryDirectory(prefix="policy-compiled-") as scratch_name:
        scratch = Path(scratch_name)
        os.environ["SO101_COMPILED_CACHE"] = str(scratch / "compiled")  # each run pays (and times) the build
        started = time.perf_counter()
        params = build_checkpoint(scratch)
        checkpoint = scratch / "smolvla"
        frames = record_frames(scratch, observations)
        print(
            f"checkpoint ({params / 1e6:.0f}M) and {observations} recorded observations in"
            f" {time.perf_counter() - started:.0f} s",
            file=sys.stderr,
        )
        build_s: dict[str, float] = {}
        for variant in variants:
            key = str(WeightPrecision(variant.precision).graphs)  # bf16 computes the fp32 graphs
            if variant.compiled and key not in build_s:
                build_s[key] = build_graphs(key, checkpoint)
        results: dict[str, dict] = {}
        for variant in variants:
            out = scratch / f"{variant.name}.npy"
            result = child(["--child", variant.name, str(checkpoint), str(frames), str(out), str(warmup), str(calls)])
            if variant.compiled:
                result["build_s"] = build_s[str(WeightPrecision(variant.precision).graphs)]
            results[variant.name] = result
            print(f"{variant.name}: median {result['median_s']:.2f} s", file=sys.stderr)
        deviations(results, scratch)
        cuda = cuda_rows(checkpoint, frames)
    report = {
        "cpu": cpu.name,
        "params": params,
        "cpus": os.cpu_count(),
        "loadavg_end": os.getloadavg(),
        "observations": observations,
        "results": results,
        "cuda": cuda,
        "summary": summary_rows(results),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print(table(results))
    print(f"\nCUDA: {cuda if isinstance(cuda, str) else json.dumps(cuda)}")
    print(f"JSON: {args.out}")


if __name__ == "__main__":
    main()
