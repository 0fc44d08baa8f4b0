"""make bench: every benchmark in one go, then one Markdown + JSON table against LeRobot.

    .venv/bin/python -m benchmarks.run_all              # ~45 min on 2 cores (SmolVLA on the CPU: ~25 of them)
    .venv/bin/python -m benchmarks.run_all --quick      # smoke run of every script (~12 min)
    .venv/bin/python -m benchmarks.run_all --only bus_cycle,judge_bench

Each benchmark runs in its own child process (a clean peak RSS, no shared state) with settings
sized so that the whole run fits in 45 minutes on 2 cores; a benchmark that fails or overruns its
time is reported as such and the others still run. Results: outputs/bench/summary.md and
summary.json (each row: metric, ours, the anchor measured in the same run, ratio, target), beside
each benchmark's own detailed JSON.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.summary import Row, extract, markdown

OUT = Path("outputs/bench")

# name -> (arguments of the full run, arguments of --quick, time limit in seconds)
PLAN: dict[str, tuple[list[str], list[str], float]] = {
    "bus_cycle": ([], ["--quick"], 120),
    "rig_loop": (["--seconds", "24", "--block-s", "2"], ["--quick"], 240),
    "camera_skew": ([], ["--quick"], 120),
    # Three runs of each pair: one run's peak memory moves by tens of MB from run to run.
    "record_writer": (["--episodes", "3", "--seconds", "6", "--repeats", "3"], ["--quick"], 600),
    "judge_bench": (["--quick"], ["--quick"], 120),
    "policy_cpu": (["--rounds", "1"], ["--quick"], 270),
    "deploy_loop": ([], ["--quick"], 180),
    "replay_throughput": ([], ["--quick"], 120),
    "live_view": (["--pairs", "3", "--seconds", "15"], ["--quick"], 300),
    "studio_scale": ([], ["--quick"], 600),
    # LeRobot's DAgger handover (the anchor of the handover-smoothness comparison): ~1 min, 5 on a busy box.
    "handover_lerobot": ([], ["--quick"], 420),
    # Ours against it (reads handover_lerobot.json, so after it): ~1 min.
    "handover_ours": ([], ["--quick"], 300),
    # Full-size SmolVLA on the CPU, LeRobot's PyTorch against the compiled runtime: the headline variants
    # on 10 recorded observations (~20 min); every variant over 100 is `python -m benchmarks.policy_compiled`.
    "policy_compiled": (
        ["--only", "lerobot,torch,openvino,onnxruntime-int8", "--observations", "10"],
        ["--quick", "--only", "torch,onnxruntime", "--observations", "2"],
        2400,
    ),
    # The virtual followers' fitted servo model against real SO-101 recordings (when present: they are
    # not committed; `$SO101_SERVO_RECORDINGS` or outputs/servo_recordings/): the committed table's fidelity.
    "servo_fit": (["--validate-only"], ["--validate-only"], 120),
    # Deploy on the virtual rig with full-size SmolVLA: starved ticks, PyTorch against OpenVINO (~6 min).
    "deploy_smolvla": (["--seconds", "40"], ["--quick"], 900),
}


def run_one(name: str, args: list[str], limit_s: float) -> tuple[str, float]:
    """Run one benchmark module; returns (status, seconds)."""
    if not Path(__file__).with_name(f"{name}.py").exists():
        return "missing", 0.0
    out = OUT / f"{name}.json"
    command = [sys.executable, "-m", f"benchmarks.{name}", *args, "--out", str(out)]
    print(f"\n=== {name}: {' '.join(command[1:])}", flush=True)
    start = time.monotonic()
    try:
        done = subprocess.run(command, timeout=limit_s, check=False)
    except subprocess.TimeoutExpired:
        return f"over its {limit_s:.0f} s limit", time.monotonic() - start
    status = "ok" if done.returncode == 0 else f"failed (exit {done.returncode})"
    return status, time.monotonic() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke-run settings for every benchmark")
    parser.add_argument("--only", default="", help="comma-separated benchmark names (default: all)")
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(PLAN)
    unknown = [n for n in names if n not in PLAN]
    if unknown:
        parser.error(f"unknown benchmark(s) {unknown}; choose from {', '.join(PLAN)}")
    OUT.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    statuses: dict[str, dict] = {}
    rows: list[Row] = []
    for name in names:
        full, quick, limit_s = PLAN[name]
        status, seconds = run_one(name, quick if args.quick else full, limit_s)
        statuses[name] = {"status": status, "seconds": round(seconds, 1)}
        path = OUT / f"{name}.json"
        if status == "ok" and path.exists():
            rows += extract(name, json.loads(path.read_text()))
    total_s = time.monotonic() - started
    table = markdown(rows)
    lines = [f"| {n} | {s['status']} | {s['seconds']} |" for n, s in statuses.items()]
    text = (
        f"# Benchmarks against LeRobot 0.6.1, one run ({total_s / 60:.1f} min, {os.cpu_count()} CPUs,"
        f" load {os.getloadavg()[0]:.2f})\n\n{table}\n\n| benchmark | status | seconds |\n|---|---|---|\n"
        + "\n".join(lines)
        + "\n"
    )
    (OUT / "summary.md").write_text(text)
    summary = {"seconds": total_s, "quick": args.quick, "benchmarks": statuses, "rows": [r.as_dict() for r in rows]}
    (OUT / "summary.json").write_text(json.dumps(summary, indent=1))
    print("\n" + text)
    print(f"wrote {OUT / 'summary.md'} and {OUT / 'summary.json'}")
    return 0 if all(s["status"] in ("ok", "missing") for s in statuses.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
