"""make bench: every benchmark in one go, then one Markdown + JSON table against LeRobot.

    .venv/bin/python -m benchmarks.run_all              # every row, sized to fit 20 min on 2 cores (measured: README)
    .venv/bin/python -m benchmarks.run_all --long       # the long variants: more observations, sessions, repeats
    .venv/bin/python -m benchmarks.run_all --quick      # smoke run of every script
    .venv/bin/python -m benchmarks.run_all --only bus_cycle,judge_bench

`make bench` is the default run; `make bench LONG=1` the long one (full-size SmolVLA over 20
observations with every headline variant, 40 s deploys, three repeats of each recording pair, and
the learning loop: demonstrations, training, rollouts scored by the virtual rig's truth).
Each benchmark runs in its own child process (a clean peak RSS, no shared state); a benchmark that
fails or overruns its time is reported as such and the others still run. Results:
outputs/bench/summary.md and summary.json (each row: metric, ours, the anchor measured in the same
run, ratio, target; the CPU named in the header), beside each benchmark's own detailed JSON.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.summary import Row, extract, markdown

OUT = Path("outputs/bench")


@dataclass(frozen=True)
class Plan:
    """One benchmark's arguments in each mode, and the time it may take."""

    default: list[str] = field(default_factory=list)
    long: list[str] | None = None  # None: as the default
    quick: list[str] = field(default_factory=lambda: ["--quick"])
    limit_s: float = 300
    long_only: bool = False  # too long for the default run: only `make bench LONG=1` (and --quick) runs it


PLAN: dict[str, Plan] = {
    "bus_cycle": Plan(limit_s=120),
    "rig_loop": Plan(["--seconds", "12", "--block-s", "2"], ["--seconds", "24", "--block-s", "2"], limit_s=240),
    "camera_skew": Plan(["--quick"], [], limit_s=120),
    # Three runs of each pair in the long run: one run's peak memory moves by tens of MB from run to run.
    "record_writer": Plan(
        ["--episodes", "3", "--seconds", "6", "--repeats", "1"],
        ["--episodes", "3", "--seconds", "6", "--repeats", "3"],
        limit_s=600,
    ),
    "judge_bench": Plan(["--quick"], limit_s=120),
    "policy_cpu": Plan(["--quick"], ["--rounds", "1"], limit_s=270),
    "deploy_loop": Plan(["--quick"], [], limit_s=180),
    "replay_throughput": Plan(["--quick"], [], limit_s=120),
    "live_view": Plan(["--quick"], ["--pairs", "3", "--seconds", "15"], limit_s=300),
    # 5 and 50 episodes by default (the growth rows read "50 vs 5"); 50 and 500 in the long run.
    "studio_scale": Plan(["--quick"], [], limit_s=600),
    # LeRobot's DAgger handover (the anchor of the handover-smoothness comparison): ~1 min, 5 on a busy box.
    "handover_lerobot": Plan(limit_s=420),
    # Ours against it (reads handover_lerobot.json, so after it): ~1 min.
    "handover_ours": Plan(limit_s=300),
    # Full-size SmolVLA on the CPU, LeRobot's PyTorch against the compiled runtime: every headline
    # variant, on 2 recorded observations by default and 20 in the long run; every variant over 100
    # is `python -m benchmarks.policy_compiled`.
    "policy_compiled": Plan(
        ["--quick", "--only", "lerobot,torch,openvino,openvino-bf16,onnxruntime-int8", "--observations", "2"],
        ["--only", "lerobot,torch,openvino,openvino-bf16,onnxruntime-int8", "--observations", "20"],
        ["--quick", "--only", "torch,onnxruntime", "--observations", "2"],
        limit_s=2400,
    ),
    # The virtual followers' fitted servo model against real SO-101 recordings (when present: they are
    # not committed; `$SO101_SERVO_RECORDINGS` or outputs/servo_recordings/): the committed table's fidelity.
    "servo_fit": Plan(["--validate-only"], quick=["--validate-only"], limit_s=120),
    # Deploy on the virtual rig with full-size SmolVLA: starved ticks, PyTorch against OpenVINO.
    "deploy_smolvla": Plan(["--seconds", "15"], ["--seconds", "40"], limit_s=900),
    # Our recordings train an ACT (stock lerobot-train) that so101-deploy runs, scored by the virtual
    # rig's ground truth beside a blind baseline and a training on shifted actions, then a campaign: ~2 h.
    "learning_loop": Plan([], limit_s=3000, long_only=True),
    # A user's whole session, so101-record against stock lerobot-record: 50 episodes of 32 s each side
    # (~65 min). Its short form, 10 episodes (~17 min), is `python -m benchmarks.record_session`: with
    # it the default run would take ~35 minutes instead of 19.
    "record_session": Plan([], ["--episodes", "50"], limit_s=1800, long_only=True),
}
LONG_ONLY = "long mode only (make bench LONG=1)"


def arguments(plan: Plan, mode: str) -> list[str]:
    """The arguments of `plan` in `mode` (default, long or quick)."""
    if mode == "long":
        return plan.default if plan.long is None else plan.long
    return plan.quick if mode == "quick" else plan.default


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
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--quick", action="store_true", help="smoke-run settings for every benchmark")
    modes.add_argument("--long", action="store_true", help="the long variants (observations, sessions, repeats)")
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
    mode = "quick" if args.quick else "long" if args.long else "default"
    for name in names:
        plan = PLAN[name]
        if plan.long_only and mode == "default":
            statuses[name] = {"status": LONG_ONLY, "seconds": 0.0}
            continue
        status, seconds = run_one(name, arguments(plan, mode), plan.limit_s * (3 if mode == "long" else 1))
        statuses[name] = {"status": status, "seconds": round(seconds, 1)}
        path = OUT / f"{name}.json"
        if status == "ok" and path.exists():
            rows += extract(name, json.loads(path.read_text()))
    total_s = time.monotonic() - started
    table = markdown(rows)
    lines = [f"| {n} | {s['status']} | {s['seconds']} |" for n, s in statuses.items()]
    from policies.compiled.cpu import read_cpu

    text = (
        f"# Benchmarks against LeRobot 0.6.1, one {mode} run ({total_s / 60:.1f} min, {read_cpu().name},"
        f" {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f})\n\n{table}\n\n"
        "| benchmark | status | seconds |\n|---|---|---|\n" + "\n".join(lines) + "\n"
    )
    (OUT / "summary.md").write_text(text)
    summary = {
        "seconds": total_s,
        "mode": mode,
        "cpu": read_cpu().name,
        "benchmarks": statuses,
        "rows": [r.as_dict() for r in rows],
    }
    (OUT / "summary.json").write_text(json.dumps(summary, indent=1))
    print("\n" + text)
    print(f"wrote {OUT / 'summary.md'} and {OUT / 'summary.json'}")
    return 0 if all(s["status"] in ("ok", "missing", LONG_ONLY) for s in statuses.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
