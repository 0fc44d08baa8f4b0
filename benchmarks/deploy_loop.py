"""Deploy loop: LeRobot 0.6.1's synchronous rollout against our asynchronous engine, same policy, same rig.

    parent: start the virtual rig (wire timing, pre-calibrated, one emulator process for every side,
            in turn); write a full-size ACT checkpoint (random weights, ACTConfig's defaults: chunk
            100 = n_action_steps; three cameras at --height x --width)
    scripted (parent, our rig): ScriptedPredictor(chunk 50, 0.5 s injected sleep, a slow wave)
            through our SyncEngine (LeRobot's blocking select_action pattern), then our AsyncEngine
    child "lerobot", a fresh process: `lerobot-rollout --strategy.type=base --inference.type=sync`
            without its CLI: RolloutConfig(robot=BiSOFollowerConfig(follower ports, 3 cameras),
            policy=PreTrainedConfig.from_pretrained(ckpt), fps=30, device=cpu) -> build_rollout_context
            -> create_strategy -> setup -> BaseStrategy.run -> teardown. Each tick, LeRobot's code:
                obs = robot.get_observation()          (both buses one after the other, 3 read_latest)
                send_next_action: build_dataset_frame -> SyncInferenceEngine.get_action:
                    prepare_observation_for_inference -> preprocessor -> policy.select_action
                    (a whole chunk when its queue is empty) -> postprocessor -> robot.send_action
                precise_sleep(1/fps - dt)
    child "ours", a fresh process: so101-deploy's check_checkpoint + load_predictor -> make_engine(EngineConfig(kind=
            async)) -> PolicySource -> source.prime(rig.observe()) -> ControlLoop(BimanualRig
            (followers, 3 cameras)).run(); then (full run) a second window unprimed, as so101-deploy
            starts it: the engine's worker thread starts inside the loop and inherits its SCHED_FIFO
    print a Markdown table, write JSON with every period and the summary rows

Both loops stop `--seconds` after their first action (LeRobot's through its shutdown event, ours
through ControlLoop.stop), and the ticks before it (the first chunk) are left out. LeRobot's side
is timed from outside its loop: a `ThreadSafeRobot` subclass stamps each tick's start
(get_observation) and the end of its work (send_action), and `policy.predict_action_chunk` is
wrapped (as build_rollout_context does for torch.compile) to time each chunk. Ours stamps the same
two points from a step hook. Both use torch's default of 2 threads and read only the followers
(so101-deploy also reads the leaders). Cameras: three virtual cameras (robot/cameras/virtual:
overhead, left and right wrist, 30 fps, phases 0/11/22 ms) rendering the followers' last read pose
on both sides; LeRobot reads them through its own `Camera` interface (`read_latest`, per arm, as
SOFollower reads OpenCV cameras; a plugin camera config, deploy_loop_lerobot.py), ours through the rig's
nearest-timestamp sync reader. Their resolution is reduced (240x320) so rendering does not
saturate 2 cores, and the checkpoint is built for it: a chunk then takes about 0.3 s here.

Definitions (budget = one period, 33.3 ms):
- starved tick: the arms got no fresh policy action when due. Ours (a background engine): the
  PolicySource's facts say starved (nothing queued; the last goal is held, the loop keeps its
  rate). LeRobot (inline inference) never lacks an action but waits for it: a tick whose period
  exceeded 1.5x the budget while it computed a chunk. `periods > 1.5x` counts long periods of any
  cause (CPU contention too).
- deadlines without a fresh action: starved ticks plus the 30 Hz deadlines that passed inside
  long periods, sum of max(0, round(period / budget) - 1); the same measure of held time for both.
- |deviation|: |tick start to the next tick's start - budget|; idle: the period minus the tick's
  work (get_observation to send_action's return), i.e. the loop's sleep; peak RSS: ru_maxrss of
  the side's process, loading included; CPU seconds by thread with its scheduling class.
The issue's target: zero starved ticks whenever a chunk's latency is below the execution time the
chunk has left when the next one is asked for (`target` in the JSON; ours asks with
`refill_threshold` actions left).

    .venv/bin/python -m benchmarks.deploy_loop            # 30 s per side (+15 s unprimed), 2 x 10 s scripted: ~2 min
    .venv/bin/python -m benchmarks.deploy_loop --quick    # 6 s per side, 2 x 3 s scripted: smoke run (~50 s)
    .venv/bin/python -m benchmarks.deploy_loop --height 480 --width 640 --out outputs/bench/deploy_full_res.json
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from importlib.metadata import version
from pathlib import Path
from typing import Any

from benchmarks.deploy_loop_lerobot import run_lerobot
from benchmarks.deploy_loop_ours import run_ours, run_scripted
from benchmarks.deploy_loop_trace import FPS, MAX_WARMUP_S, SCRIPTED_LATENCY_S, STALL_FACTOR, rig_config
from benchmarks.rig_loop import CAMERAS
from benchmarks.summary import Row

FULL = {"seconds": 30.0, "unprimed_s": 15.0, "scripted_s": 10.0}
QUICK = {"seconds": 6.0, "unprimed_s": 0.0, "scripted_s": 3.0}


# --- the parent -------------------------------------------------------------------------


def build_checkpoint(directory: Path, height: int, width: int) -> int:
    """Full-size ACT (ACTConfig's defaults: ResNet18, dim 512, 4+1 layers, chunk 100), random weights."""
    import torch
    from lerobot.policies import ACTConfig
    from lerobot.policies.act.modeling_act import ACTPolicy

    from policies.testing.tiny_policies import policy_features, save_checkpoint, with_processors
    from robot.joints import BIMANUAL_KEYS

    cameras = [(name, height, width) for name, _, _ in CAMERAS]
    inputs, outputs, stats = policy_features(cameras, BIMANUAL_KEYS, BIMANUAL_KEYS)
    torch.manual_seed(0)
    config = ACTConfig(input_features=inputs, output_features=outputs, device="cpu", pretrained_backbone_weights=None)
    act = with_processors(ACTPolicy(config), config, stats)
    save_checkpoint(act, directory)
    return sum(p.numel() for p in act.policy.parameters())


def child(side: str, checkpoint: Path, root: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Run one side in a fresh interpreter (a clean peak RSS); its last stdout line is JSON."""
    command = [sys.executable, "-m", "benchmarks.deploy_loop", "--child", side, str(checkpoint), str(root)]
    command += ["--seconds", str(args.seconds), "--unprimed-s", str(args.unprimed_s)]
    command += ["--height", str(args.height), "--width", str(args.width)]
    log = root / f"{side}.log"
    started = time.monotonic()
    with log.open("w") as stderr:
        done = subprocess.run(
            command,
            stdout=subprocess.PIPE,
            stderr=stderr,
            stdin=subprocess.DEVNULL,  # LeRobot's calibrate() would prompt on a mismatch: fail instead
            text=True,
            timeout=args.seconds + args.unprimed_s + 2 * MAX_WARMUP_S + 120,
        )
    if done.returncode != 0:
        print(log.read_text()[-3000:], file=sys.stderr)
        raise SystemExit(f"the {side} child failed (exit {done.returncode})")
    results = json.loads(done.stdout.strip().splitlines()[-1])
    warnings = sum("running slower" in line for line in log.read_text().splitlines())
    for result in results:
        result["process_s"] = time.monotonic() - started  # the child's whole life: import, load, connect, run
        result["slow_loop_warnings_logged"] = warnings  # LeRobot's "Record loop is running slower" lines
    return results


def starved(result: dict[str, Any]) -> int:
    """Starved ticks by the docstring's definition: held ticks (background engines), stalled ticks (inline)."""
    return result["stalls_computing_a_chunk"] if result["inference"] == "inline" else result["engine_starved_ticks"]


def table(results: list[dict[str, Any]]) -> str:
    """One row per side."""
    lines = [
        "| side | ticks | starved | periods > 1.5x | deadlines w/o fresh action | |dev| p50 / p99 / max ms "
        "| rate Hz | idle % | chunk latency p50 / max s | chunks | peak RSS MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def num(value: float | None, digits: int = 3) -> str:
        return "–" if value is None else f"{value:.{digits}g}"

    for r in results:
        lines.append(
            f"| {r['side']} | {r['ticks']} | {starved(r)} | {r['periods_over_1.5x']} | "
            f"{r['deadlines_without_fresh_action']} | {r['period_abs_dev_p50_ms']:.2f} / "
            f"{r['period_abs_dev_p99_ms']:.1f} / {r['period_abs_dev_max_ms']:.0f} | {r['achieved_hz']:.2f} | "
            f"{100 * r['idle_fraction']:.0f} | {num(r['chunk_latency_p50_s'])} / {num(r['chunk_latency_max_s'])} | "
            f"{r['chunks']} | {num(r.get('peak_rss_mb'), 4)} |"
        )
    return "\n".join(lines)


def summary_rows(ours: dict, lerobot: dict, scripted: list[dict]) -> list[Row]:
    """The headline rows for benchmarks/summary.py."""
    label = f"full-size ACT, {ours['camera_size']} cameras"

    def per_1000(result: dict, count: float) -> float:
        return 1000 * count / max(1, result["ticks"])

    def deadlines(result: dict) -> float:
        return per_1000(result, result["deadlines_without_fresh_action"])

    rows = [
        Row(
            "deploy_loop",
            f"deploy: starved ticks per 1000, {label}",
            "",
            per_1000(ours, starved(ours)),
            per_1000(lerobot, starved(lerobot)),
            target="0 while chunk latency < the chunk's remaining execution time",
        ),
        Row(
            "deploy_loop",
            f"deploy: deadlines without a fresh action per 1000, {label}",
            "",
            deadlines(ours),
            deadlines(lerobot),
            target="0",
        ),
        Row(
            "deploy_loop",
            f"deploy: loop period |dev| p99, {label}",
            "ms",
            ours["period_abs_dev_p99_ms"],
            lerobot["period_abs_dev_p99_ms"],
            target="≤ 2 ms",
        ),
        Row(
            "deploy_loop",
            f"deploy: loop period |dev| max, {label}",
            "ms",
            ours["period_abs_dev_max_ms"],
            lerobot["period_abs_dev_max_ms"],
        ),
        Row(
            "deploy_loop",
            f"deploy: achieved loop rate, {label}",
            "Hz",
            ours["achieved_hz"],
            lerobot["achieved_hz"],
            higher_is_better=True,
            target="30 Hz",
        ),
        Row(
            "deploy_loop",
            f"deploy: loop idle (sleeping) share, {label}",
            "%",
            100 * ours["idle_fraction"],
            100 * lerobot["idle_fraction"],
            higher_is_better=True,
        ),
        Row(
            "deploy_loop",
            f"deploy: ACT chunk latency p50 in the loop, {label}",
            "s",
            ours["chunk_latency_p50_s"],
            lerobot["chunk_latency_p50_s"],
        ),
        Row(
            "deploy_loop",
            f"deploy: peak RSS of the process, {label}",
            "MB",
            ours["peak_rss_mb"],
            lerobot["peak_rss_mb"],
            target="≤ LeRobot's",
        ),
    ]
    sync, background = (
        next((r for r in scripted if r["inference"] == kind), None) for kind in ("inline", "background")
    )
    if sync and background:
        left_s = background["target"]["time_left_at_request_min_s"]
        rows.append(
            Row(
                "deploy_loop",
                "deploy: deadlines without a fresh action per 1000, scripted 0.5 s chunk of 50",
                "",
                deadlines(background),
                deadlines(sync),
                anchor_name="our sync engine (LeRobot's blocking pattern)",
                target=f"0 (latency {SCRIPTED_LATENCY_S} s < the {left_s:.2f} s left)",
            )
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 6 s per side, 3 s per scripted engine")
    parser.add_argument("--seconds", type=float, default=None, help="measured seconds per side (default 30, quick 6)")
    parser.add_argument(
        "--unprimed-s", type=float, default=None, help="then ours as so101-deploy starts it, s (default 15, quick 0)"
    )
    parser.add_argument("--scripted-s", type=float, default=None, help="s per scripted engine (default 10, quick 3)")
    parser.add_argument("--height", type=int, default=240, help="camera and policy image height, px")
    parser.add_argument("--width", type=int, default=320, help="camera and policy image width, px")
    parser.add_argument("--out", type=Path, default=Path("outputs/bench/deploy_loop.json"))
    parser.add_argument("--child", nargs=3, metavar=("SIDE", "CHECKPOINT", "ROOT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    preset = QUICK if args.quick else FULL
    for name in ("seconds", "unprimed_s", "scripted_s"):
        if getattr(args, name) is None:
            setattr(args, name, preset[name])
    if args.child:
        side, checkpoint, root = args.child
        where = (Path(checkpoint), Path(root), args.seconds, args.height, args.width)
        results = [run_lerobot(*where)] if side == "lerobot" else run_ours(*where, unprimed_s=args.unprimed_s)
        print(json.dumps(results))
        return
    started = time.monotonic()
    loadavg_start = os.getloadavg()
    size = f"{args.height}x{args.width}"
    with tempfile.TemporaryDirectory(prefix="deploy-loop-") as tmp:
        root = Path(tmp)
        # Before LeRobot's hub code reads them (children inherit): no network, no files in ~/.cache.
        os.environ["HF_LEROBOT_CALIBRATION"] = str(root)
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["HF_HOME"] = str(root / "hf")
        from robot.rig_ports import rig_ports

        with rig_ports(rig_config(root, args.height, args.width)):  # one emulator for every side, in turn
            params = build_checkpoint(root / "act", args.height, args.width)
            print(
                f"built a full-size ACT ({params / 1e6:.1f}M params) in {time.monotonic() - started:.0f} s",
                file=sys.stderr,
            )
            scripted = run_scripted(root, args.scripted_s, args.height, args.width) if args.scripted_s > 0 else []
            lerobot = child("lerobot", root / "act", root, args)
            print(f"lerobot: {lerobot[0]['process_s']:.0f} s", file=sys.stderr)
            ours = child("ours", root / "act", root, args)
            print(f"ours: {ours[0]['process_s']:.0f} s", file=sys.stderr)
    for result in [*lerobot, *ours]:
        result["camera_size"] = size
    rows = summary_rows(ours[0], lerobot[0], scripted)
    elapsed_s = time.monotonic() - started
    meta = {
        "command": " ".join([Path(sys.executable).name, "-m", "benchmarks.deploy_loop", *(argv or sys.argv[1:])]),
        "elapsed_s": elapsed_s,
        "loadavg_start": loadavg_start,
        "loadavg_end": os.getloadavg(),
        "seconds_per_side": args.seconds,
        "unprimed_s": args.unprimed_s,
        "scripted_s": args.scripted_s,
        "fps": FPS,
        "cameras": [{"name": n, "view": str(v), "phase_s": p, "size": size} for n, v, p in CAMERAS],
        "act_params": params,
        "stall_factor": STALL_FACTOR,
        "python": platform.python_version(),
        "lerobot": version("lerobot"),
        "cpu_count": os.cpu_count(),
    }
    ordered = [*lerobot, *ours, *scripted]
    print(f"Deploy loop at {FPS} Hz, full-size ACT (chunk 100, {size} cameras), {args.seconds:.0f} s per side")
    print(f"(load average at start {' '.join(f'{v:.2f}' for v in loadavg_start)}, at end ", end="")
    print(f"{' '.join(f'{v:.2f}' for v in os.getloadavg())})\n")
    print(table(ordered))
    print()
    for result in ordered:
        if "target" in result and result["target"]["chunks"]:
            t = result["target"]
            print(
                f"{result['side']}: {t['chunks_with_latency_below_time_left']} of {t['chunks']} chunks asked for "
                f"took less than the execution time left then (min {t['time_left_at_request_min_s']:.2f} s; "
                f"latency max {t['chunk_latency_max_s']:.2f} s); {t['starved_ticks']} starved ticks, "
                f"{t['starved_ticks_the_target_forbids']} while such a chunk was computed: "
                f"target {'met' if t['met'] else 'NOT met'}"
            )
    print(f"LeRobot logged {lerobot[0]['slow_loop_warnings_logged']} 'running slower' warnings")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    summary = [asdict(row) for row in rows]  # Row's keys; summary.py computes the ratio
    args.out.write_text(json.dumps({"meta": meta, "results": ordered, "summary": summary}, indent=1))
    print(f"\nwrote {args.out} ({elapsed_s:.0f} s)")


if __name__ == "__main__":
    main()
