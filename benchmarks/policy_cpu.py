"""CPU chunk latency and peak memory of full-size ACT and SmolVLA: our LeRobotPredictor against LeRobot's path.

    child --build DIR            full-size ACT and SmolVLA, random weights (seed 0), saved as checkpoints
    for policy in (act, smolvla):
        for impl in (lerobot, ours):       each in a fresh child process (this file with --run), same inputs
            lerobot: PreTrainedConfig/Policy.from_pretrained + make_pre_post_processors(pretrained_path)
                     (as lerobot-rollout loads), then per chunk: policy.reset(), then
                     lerobot.common.control_utils.predict_action(...) (select_action on an empty
                     queue: one full forward, pre- and post-processing included)
            ours:    read_checkpoint -> check_contract -> load_policy -> LeRobotPredictor.predict_chunk
            W warm-up chunks, then N timed chunks; report load time, first chunk, median / p95 / min,
            and the child's peak RSS (ru_maxrss: the whole process, loading included)
    print a Markdown table (ours / LeRobot ratios), write JSON with every sample

Full size means the published dimensions: ACT with ACTConfig's defaults (ResNet18, dim 512, 4+1
layers, chunk 100; no pretrained backbone download), SmolVLA with SmolVLM2-500M's dimensions
(450M parameters, 16 VLM layers used, 512x512 images, chunk 50, 10 flow steps) on a locally written
config and the tiny tokenizer. Inputs: 12 joints and three 480x640 frames, as the real rig gives.
Both sides use the same torch thread count (`--threads`, default: every core). A measurement, not
a test: nothing is asserted. Stack notes measured LeRobot at 0.59 s (ACT) and 5.1 s (SmolVLA) per
chunk on 2 cores, SmolVLA peaking at 2.8 GB.

    .venv/bin/python -m benchmarks.policy_cpu                 # 2 rounds (ABBA) x (3 + 10 ACT, 1 + 5 SmolVLA chunks)
    .venv/bin/python -m benchmarks.policy_cpu --quick         # 1 round x (1 + 3 ACT, 1 + 2 SmolVLA), smoke run
    .venv/bin/python -m benchmarks.policy_cpu --wait-quiet 600   # first wait (<= 600 s) for loadavg < 0.6
    .venv/bin/python -m benchmarks.policy_cpu --only act --threads 1 --out outputs/bench/act_1thread.json
"""

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.json_child import run_json_child

CAMERAS = (("left_wrist", 480, 640), ("right_wrist", 480, 640), ("overhead", 480, 640))
TASK = "Fold the cloth"
POLICIES = ("act", "smolvla")
IMPLS = ("lerobot", "ours")
# (warm-up, timed) chunks per policy: full and --quick
CALLS = {"act": (3, 10), "smolvla": (1, 5)}
QUICK_CALLS = {"act": (1, 3), "smolvla": (1, 2)}
QUIET_LOADAVG = 0.6  # --wait-quiet's threshold, as benchmarks/rig_loop.py


def build(directory: Path, policies: list[str]) -> dict:
    """Write full-size checkpoints of `policies` under `directory`; returns their parameter counts."""
    from policies.testing.tiny_policies import policy_features
    from robot.joints import BIMANUAL_KEYS

    inputs, outputs, stats = policy_features(CAMERAS, BIMANUAL_KEYS, BIMANUAL_KEYS)
    params = {}
    if "act" in policies:
        params["act"] = _save_act(directory / "act", inputs, outputs, stats)
    if "smolvla" in policies:
        params["smolvla"] = save_smolvla(directory, inputs, outputs, stats)
    return params


def _save_act(directory: Path, inputs: dict, outputs: dict, stats: dict) -> int:
    import torch
    from lerobot.policies import ACTConfig
    from lerobot.policies.act.modeling_act import ACTPolicy

    from policies.testing.tiny_policies import save_checkpoint, with_processors

    torch.manual_seed(0)
    act_config = ACTConfig(
        input_features=inputs, output_features=outputs, device="cpu", pretrained_backbone_weights=None
    )
    act = with_processors(ACTPolicy(act_config), act_config, stats)
    save_checkpoint(act, directory)
    return sum(p.numel() for p in act.policy.parameters())


def save_smolvla(directory: Path, inputs: dict, outputs: dict, stats: dict) -> int:
    """Full-size SmolVLA (SmolVLM2-500M's dimensions, seed 0) into `directory`/smolvla; its parameter count."""
    import torch
    from lerobot.policies import SmolVLAConfig
    from lerobot.policies.smolvla.modeling_smolvla import SmolVLAPolicy

    from policies.testing.tiny_policies import SMOLVLM2_500M, save_checkpoint, with_processors, write_tiny_vlm

    vlm = write_tiny_vlm(directory / "smolvlm2_500m_config", size=SMOLVLM2_500M)
    torch.manual_seed(0)
    smol_config = SmolVLAConfig(
        input_features=inputs, output_features=outputs, device="cpu", vlm_model_name=str(vlm), load_vlm_weights=False
    )
    smolvla = with_processors(SmolVLAPolicy(smol_config), smol_config, stats)
    save_checkpoint(smolvla, directory / "smolvla")
    return sum(p.numel() for p in smolvla.policy.parameters())


def observation(seed: int = 0) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Joint state (degrees, gripper %) and three random 480x640 RGB frames."""
    rng = np.random.default_rng(seed)
    state = np.concatenate([rng.normal(0, 20, 5), rng.uniform(0, 100, 1)] * 2).astype(np.float32)
    images = {name: rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for name, h, w in CAMERAS}
    return state, images


def rss_mb() -> float:
    """Current resident set size of this process, MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run(policy: str, impl: str, directory: Path, warmup: int, calls: int, threads: int) -> dict:
    """Load one checkpoint one way and time its chunks (in this process)."""
    import torch

    torch.set_num_threads(threads)
    state, images = observation()
    started = time.perf_counter()
    if impl == "lerobot":
        from lerobot.common.control_utils import predict_action
        from lerobot.configs import PreTrainedConfig
        from lerobot.policies import get_policy_class, make_pre_post_processors

        config = PreTrainedConfig.from_pretrained(directory)
        config.device = "cpu"
        model = get_policy_class(config.type).from_pretrained(directory, config=config)
        pre, post = make_pre_post_processors(
            config, pretrained_path=str(directory), preprocessor_overrides={"device_processor": {"device": "cpu"}}
        )
        frame = {"observation.state": state} | {f"observation.images.{k}": v for k, v in images.items()}
        device = torch.device("cpu")

        def chunk() -> None:
            model.reset()  # empty action queue: select_action computes a whole chunk, as at a chunk boundary
            predict_action(frame, model, device, pre, post, False, TASK, "bi_so_follower")
    else:
        from policies.checkpoint import load_policy, read_checkpoint
        from policies.contract import RigSpec, check_contract
        from policies.engine import PolicyInput
        from policies.predictor import LeRobotPredictor

        checkpoint = read_checkpoint(str(directory))
        rig = RigSpec(cameras={name: (h, w) for name, h, w in CAMERAS})
        contract = check_contract(checkpoint.features, rig)
        predictor = LeRobotPredictor(load_policy(checkpoint, "cpu"), contract, num_threads=threads)
        inputs = PolicyInput(state=state, images=images, task=TASK, time_s=0.0)

        def chunk() -> None:
            predictor.predict_chunk(inputs)

    load_s = time.perf_counter() - started
    rss_loaded = rss_mb()
    samples = []
    for _ in range(warmup + calls):
        begin = time.perf_counter()
        chunk()
        samples.append(time.perf_counter() - begin)
    timed = samples[warmup:]
    return {
        "policy": policy,
        "impl": impl,
        "threads": torch.get_num_threads(),
        "load_s": load_s,
        "first_chunk_s": samples[0],
        "median_s": float(np.median(timed)),
        "p95_s": float(np.percentile(timed, 95)),
        "min_s": float(min(timed)),
        "samples_s": samples,
        "warmup": warmup,
        "rss_after_load_mb": rss_loaded,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def table(results: list[dict], params: dict) -> str:
    """Markdown table; ratio columns are ours / LeRobot for the same policy."""
    lines = [
        "| policy | params | impl | threads | load s | first chunk s | chunk median s | p95 s | min s | peak RSS MB "
        "| median ours/LeRobot | peak RSS ours/LeRobot |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    by_key = {(r["policy"], r["impl"]): r for r in results}
    for r in results:
        anchor = by_key.get((r["policy"], "lerobot"))
        ratio = rss_ratio = "-"
        if r["impl"] == "ours" and anchor:
            ratio = f"{r['median_s'] / anchor['median_s']:.2f}"
            rss_ratio = f"{r['peak_rss_mb'] / anchor['peak_rss_mb']:.2f}"
        lines.append(
            f"| {r['policy']} | {params.get(r['policy'], 0) / 1e6:.2f}M | {r['impl']} | {r['threads']} "
            f"| {r['load_s']:.1f} | {r['first_chunk_s']:.2f} | {r['median_s']:.3f} | {r['p95_s']:.3f} "
            f"| {r['min_s']:.3f} | {r['peak_rss_mb']:.0f} | {ratio} | {rss_ratio} |"
        )
    return "\n".join(lines)


def child(arguments: list[str]) -> dict:
    """This file with `arguments` in a fresh interpreter: its JSON result."""
    return run_json_child("benchmarks.policy_cpu", arguments)


def merge(runs: list[dict]) -> dict:
    """One row from several rounds of the same policy and impl: all timed chunks pooled."""
    timed = [sample for r in runs for sample in r["samples_s"][r["warmup"] :]]
    first = runs[0]
    return first | {
        "rounds": len(runs),
        "load_s": float(np.median([r["load_s"] for r in runs])),
        "first_chunk_s": float(np.median([r["first_chunk_s"] for r in runs])),
        "median_s": float(np.median(timed)),
        "p95_s": float(np.percentile(timed, 95)),
        "min_s": float(min(timed)),
        "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
        "rss_after_load_mb": max(r["rss_after_load_mb"] for r in runs),
        "samples_s": [r["samples_s"] for r in runs],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", choices=POLICIES)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rounds", type=int, default=None, help="child runs per impl, ABBA order (default 2, quick 1)")
    parser.add_argument("--wait-quiet", type=float, default=0.0, help="first wait up to S s for a load average < 0.6")
    parser.add_argument("--out", type=Path, default=Path("outputs/bench/policy_cpu.json"))
    parser.add_argument("--build", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--run", nargs=5, metavar=("POLICY", "IMPL", "DIR", "WARMUP", "CALLS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing here needs the hub
    policies = [args.only] if args.only else list(POLICIES)
    if args.build:
        print(json.dumps(build(args.build, policies)))
        return
    if args.run:
        policy, impl, directory, warmup, calls = args.run
        print(json.dumps(run(policy, impl, Path(directory), int(warmup), int(calls), args.threads)))
        return
    calls = QUICK_CALLS if args.quick else CALLS
    rounds = args.rounds or (1 if args.quick else 2)
    wait_until = time.monotonic() + args.wait_quiet
    while os.getloadavg()[0] >= QUIET_LOADAVG and time.monotonic() < wait_until:
        time.sleep(1.0)
    loadavg_start = os.getloadavg()
    results = []
    with tempfile.TemporaryDirectory(prefix="policy-cpu-") as scratch:
        started = time.perf_counter()
        params = child(["--build", scratch, *(["--only", args.only] if args.only else [])])
        print(f"built full-size checkpoints in {time.perf_counter() - started:.0f} s: {params}", file=sys.stderr)
        for policy in policies:
            warmup, timed = calls[policy]
            runs: dict[str, list[dict]] = {impl: [] for impl in IMPLS}
            order = [IMPLS[(index + index // 2) % 2] for index in range(2 * rounds)]  # A B B A A B ...
            for impl in order:
                run_args = ["--run", policy, impl, str(Path(scratch) / policy), str(warmup), str(timed)]
                runs[impl].append(child([*run_args, "--threads", str(args.threads)]))
                print(f"{policy} {impl}: median {runs[impl][-1]['median_s']:.3f} s", file=sys.stderr)
            results.extend(merge(runs[impl]) for impl in IMPLS)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"loadavg_start": loadavg_start, "loadavg_end": os.getloadavg(), "cpus": os.cpu_count(), "rounds": rounds}
    args.out.write_text(json.dumps(meta | {"params": params, "results": results}, indent=1))
    print(table(results, params))
    print(f"\nloadavg at the start {loadavg_start}, at the end {os.getloadavg()}; JSON: {args.out}")


if __name__ == "__main__":
    main()
