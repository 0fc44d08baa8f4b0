"""Deploy with full-size SmolVLA on the CPU: starved ticks of PyTorch against the compiled runtime.

    parent: the virtual rig (wire timing, pre-calibrated; three virtual cameras at --height x --width),
            a full-size SmolVLA checkpoint for them (random weights, seed 0; SmolVLA resizes every
            frame to 512x512 itself), its compiled graphs built once into a scratch cache
    for each variant, a fresh child (benchmarks/deploy_loop_ours.run_ours, as so101-deploy loads
    and runs a policy): --policy.runtime=<variant> through the async engine, primed, for --seconds;
            ticks, starved ticks (nothing queued: the goal is held), deadlines without a fresh action,
            chunk latency, and the issue's target: no starved tick while a chunk whose latency is
            below the execution time left at its request is computed
    print a Markdown table, write JSON with `summary` rows (ours compiled vs PyTorch, per 1,000 ticks)

A 50-action chunk lasts 1.67 s at 30 Hz; the async engine asks for the next one with
`refill_threshold` actions left. A chunk that takes longer than the time left starves the loop
until it lands, whichever runtime computes it: the table says how many chunks were in time.

    .venv/bin/python -m benchmarks.deploy_smolvla                 # 60 s per variant (~8 min)
    .venv/bin/python -m benchmarks.deploy_smolvla --quick         # 20 s per variant
    .venv/bin/python -m benchmarks.deploy_smolvla --variants torch,openvino,onnxruntime
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks.deploy_loop_trace import FPS, rig_config
from benchmarks.rig_loop import CAMERAS
from benchmarks.summary import Row

VARIANTS = ("torch", "openvino")
ANCHOR = "torch"


def run_child(variant: str, root: Path, seconds: float, height: int, width: int) -> list[dict[str, Any]]:
    """One variant through so101-deploy's loading, engine and loop (in this process)."""
    from benchmarks.deploy_loop_ours import run_ours
    from policies.compiled.options import PolicyRuntime

    return run_ours(root / "smolvla", root, seconds, height, width, policy={"runtime": PolicyRuntime(variant)})


def child(variant: str, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """`variant` in a fresh interpreter; its last stdout line is JSON."""
    command = [sys.executable, "-m", "benchmarks.deploy_smolvla", "--child", variant, str(root)]
    command += ["--seconds", str(args.seconds), "--height", str(args.height), "--width", str(args.width)]
    log = root / f"{variant}.log"
    with log.open("w") as stderr:
        done = subprocess.run(
            command,
            stdout=subprocess.PIPE,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            text=True,
            timeout=args.seconds + 900,
        )
    if done.returncode != 0:
        print(log.read_text()[-3000:], file=sys.stderr)
        raise SystemExit(f"the {variant} child failed (exit {done.returncode})")
    result = json.loads(done.stdout.strip().splitlines()[-1])[0]
    result["side"] = variant
    return result


def per_1000(result: dict[str, Any], key: str) -> float:
    """`key`'s count per 1,000 ticks."""
    return 1000 * result[key] / max(1, result["ticks"])


def table(results: list[dict[str, Any]]) -> str:
    """One row per variant."""
    lines = [
        "| runtime | ticks | starved /1000 | deadlines w/o fresh action /1000 | chunks | chunk latency p50 / max s "
        "| time left at request min s | chunks in time | target |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        t = r["target"]
        left = t["time_left_at_request_min_s"]
        lines.append(
            f"| {r['side']} | {r['ticks']} | {per_1000(r, 'engine_starved_ticks'):.0f} "
            f"| {per_1000(r, 'deadlines_without_fresh_action'):.0f} | {r['chunks']} "
            f"| {r['chunk_latency_p50_s'] or 0:.2f} / {r['chunk_latency_max_s'] or 0:.2f} "
            f"| {'-' if left is None else f'{left:.2f}'} | {t['chunks_with_latency_below_time_left']} of {t['chunks']} "
            f"| {'met' if t['met'] else 'NOT met'} |"
        )
    return "\n".join(lines)


def summary_rows(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each compiled runtime against PyTorch, measured in the same run."""
    anchor = next((r for r in results if r["side"] == ANCHOR), None)
    rows = []
    for r in results:
        if r["side"] == ANCHOR or anchor is None:
            continue
        rows.append(
            asdict(
                Row(
                    "deploy_smolvla",
                    f"deploy, full-size SmolVLA on the CPU: starved ticks per 1000, {r['side']}",
                    "",
                    per_1000(r, "engine_starved_ticks"),
                    per_1000(anchor, "engine_starved_ticks"),
                    anchor_name="PyTorch (LeRobot's model)",
                    target="0 while chunk latency < the chunk's remaining execution time",
                )
            )
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 s per variant")
    parser.add_argument("--seconds", type=float, default=None, help="measured seconds per variant (default 60)")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated --policy.runtime values")
    parser.add_argument("--height", type=int, default=240, help="camera height, px (SmolVLA pads to 512x512)")
    parser.add_argument("--width", type=int, default=320, help="camera width, px")
    parser.add_argument("--out", type=Path, default=Path("outputs/bench/deploy_smolvla.json"))
    parser.add_argument("--child", nargs=2, metavar=("VARIANT", "ROOT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.seconds = args.seconds or (20.0 if args.quick else 60.0)
    if args.child:
        variant, root = args.child
        print(json.dumps(run_child(variant, Path(root), args.seconds, args.height, args.width)))
        return
    from benchmarks.policy_compiled import build_checkpoint, build_graphs
    from robot.rig_ports import rig_ports

    variants = [v for v in args.variants.split(",") if v]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="deploy-smolvla-") as tmp:
        root = Path(tmp)
        os.environ["HF_LEROBOT_CALIBRATION"] = str(root)
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["HF_HOME"] = str(root / "hf")
        os.environ["SO101_COMPILED_CACHE"] = str(root / "compiled")
        cameras = tuple((name, args.height, args.width) for name, _, _ in CAMERAS)
        params = build_checkpoint(root, cameras)
        if any(v != "torch" for v in variants):
            print(f"compiled graphs built in {build_graphs('fp32', root / 'smolvla'):.0f} s", file=sys.stderr)
        with rig_ports(rig_config(root, args.height, args.width)):
            results = []
            for variant in variants:
                results.append(child(variant, root, args))
                print(
                    f"{variant}: {per_1000(results[-1], 'engine_starved_ticks'):.0f} starved per 1000", file=sys.stderr
                )
    print(
        f"Deploy at {FPS} Hz, full-size SmolVLA ({params / 1e6:.0f}M) on {os.cpu_count()} CPUs, async engine, "
        f"{args.seconds:.0f} s per runtime (load average at the end {os.getloadavg()[0]:.2f})\n"
    )
    print(table(results))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for result in results:
        result.pop("periods_ms", None)
    report = {
        "elapsed_s": time.monotonic() - started,
        "params": params,
        "results": results,
        "summary": summary_rows(results),
    }
    args.out.write_text(json.dumps(report, indent=1))
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
