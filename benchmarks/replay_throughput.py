"""Replay throughput: so101-replay as fast as possible against LeRobot 0.6.1's lerobot-replay loop, in one run.

    record E episodes of S s on the virtual rig with so101-record (wire timing; three 96x128 h264
        cameras: replaying actions decodes no video, so the camera size only changes what the
        recording costs)
    ours     `Replayer`, what so101-replay runs, at fast pace (the loop's clock advances only by its
             own sleeps, so no tick waits), every episode:
                 dry arms      the safety layer and LeRobot's normalisation to encoder steps, no bus
                               (5 passes, the median one reported: each takes a fraction of a second)
                 virtual rig   the emulated followers over their pseudo-terminals; each episode's
                               ease-in to its first action runs in real time, outside the timing
    LeRobot  `lerobot_replay.replay`'s loop, line for line, on a stock `BiSOFollower` connected to
             the virtual rig's follower ports, episode by episode (one LeRobotDataset each, as the
             script loads one): per frame get_observation(), the default robot action processor,
             send_action(), precise_sleep(1/fps - dt); once as written (paced to the dataset's fps)
             and once with the sleep removed (what its step alone allows)
    throughput = replayed frames / wall time of the episode loops (loading, connecting, the
    ease-in and the report left out), and as a multiple of real time (throughput / dataset fps)
    print a Markdown table, write JSON: per-tick durations, and a "summary" list for benchmarks.summary

A measurement, not a test: nothing is asserted about speed. Each row also says how far what was
sent is from the dataset's actions (ours: what the arms were given after the safety layer, in
whole encoder steps; LeRobot: what `send_action` returned, with no `max_relative_target` set) and
whether every frame was replayed. Ours runs at the rig file's `realtime_priority` (SCHED_FIFO where
permitted), as the command does; LeRobot's loop at normal priority, as its script does.

    .venv/bin/python -m benchmarks.replay_throughput            # 2 episodes x 8 s, ~60 s on 2 cores
    .venv/bin/python -m benchmarks.replay_throughput --quick    # 1 episode x 3 s, smoke run (~30 s)
    .venv/bin/python -m benchmarks.replay_throughput --episodes 4 --seconds 20 --out outputs/bench/replay.json
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections import Counter
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from robot.joints import BIMANUAL_KEYS, Role, Side

BENCHMARK = "replay_throughput"
RIG_ID = "bench"
CAMERAS = ("left_wrist", "right_wrist", "overhead")
CAMERA_SIZE = (96, 128)  # height, width px
ENCODER_STEP_DEG = 360 / 4095  # one step of a body joint; a gripper's is smaller (percent of ~1500 steps)
OURS_DRY, OURS_VIRTUAL = "ours, dry arms", "ours, virtual rig"
LEROBOT_PACED, LEROBOT_FREE = "LeRobot lerobot-replay", "LeRobot loop, sleep removed"
ANCHOR_NAME = "LeRobot 0.6.1 lerobot-replay"
DRY_PASSES = 5  # a dry pass takes ~0.2 s: the median of a few is steadier than one


# --- the dataset ------------------------------------------------------------------------


def write_rig_file(folder: Path) -> Path:
    """A pre-calibrated virtual rig in wire timing living under `folder`, with three small cameras."""
    cameras = [
        {
            "kind": "virtual",
            "name": name,
            "view": name,
            "width": CAMERA_SIZE[1],
            "height": CAMERA_SIZE[0],
            "phase_s": 0.003 * (i + 1),
            "seed": i,
            # The recording is only the input here: a starved capture thread must not end it.
            "capture": {"max_frame_age_s": 1.0},
        }
        for i, name in enumerate(CAMERAS)
    ]
    rig = {
        "id": RIG_ID,
        "calibration": {"dir": str(folder / "calibration")},
        "bus": {"reply_timeout_ms": 20.0, "read_deadline_ms": 50.0},  # as hardware_configs/virtual.yaml
        "cameras": cameras,
        "virtual": {"runtime_dir": str(folder / "run"), "timing": "wire", "calibrated": True},
    }
    path = folder / "rig.yaml"
    path.write_text(yaml.safe_dump(rig))
    return path


def record(rig_file: Path, root: Path, episodes: int, seconds: float) -> float:
    """so101-record on the virtual rig (its scripted cloth fold); returns the wall time, s."""
    command = [
        str(Path(sys.executable).parent / "so101-record"),
        f"--config_path={rig_file}",
        "--dataset.repo_id=bench/replay",
        f"--dataset.root={root}",
        "--dataset.vcodec=h264",
        f"--session.episode_s={seconds}",
        "--session.reset_s=0.5",
        f"--session.num_episodes={episodes}",
        "--gates.min_fps=20",
        "--gates.max_period_error_p99_ms=200",
        "--gates.max_skew_p99_ms=200",
    ]
    start = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, timeout=120 + 3 * episodes * seconds)
    if result.returncode != 0:
        raise RuntimeError(f"so101-record failed ({result.returncode}): {result.stderr[-2000:]}")
    return time.monotonic() - start


# --- ours ---------------------------------------------------------------------------------


def ours(rig_file: Path, root: Path, target: str) -> dict[str, Any]:
    """Every episode through `Replayer` at fast pace on `target` (dry or virtual)."""
    from policies.commands.replay import ReplayCommandConfig
    from policies.replay.dataset import open_dataset
    from policies.replay.fit import fit_dataset
    from policies.replay.pacing import Pace
    from policies.replay.plan import ReplayPlan, Target
    from policies.replay.run import Replayer
    from robot.cli import parse_command

    rig = parse_command(ReplayCommandConfig, [f"--config_path={rig_file}"]).rig
    dataset = open_dataset(root)
    fit = fit_dataset(dataset, joint_map="", rig_fps=rig.fps, fps=None)  # as so101-replay checks it
    episodes = tuple(e.index for e in dataset.episodes)
    plan = ReplayPlan(dataset, fit, episodes, Target(target), Pace.FAST, rig)
    passes = []
    for _ in range(DRY_PASSES if target == "dry" else 1):
        start = time.monotonic()
        replayed = Replayer(plan, on_event=lambda _: None).run()
        passes.append((sum(e.wall_s for e in replayed.episodes), time.monotonic() - start, replayed))
    loop_s, run_s, replayed = sorted(passes, key=lambda p: p[0])[len(passes) // 2]  # the median pass
    frames = sum(len(e.trace.frames) for e in replayed.episodes)
    ticks_ms = np.concatenate([np.diff(e.trace.wall_s) * 1e3 for e in replayed.episodes])
    off = max(float(np.max(np.abs(e.trace.sent - e.recorded_actions))) for e in replayed.episodes)
    return {
        "frames": frames,
        "loop_s": loop_s,
        "passes_loop_s": [p[0] for p in passes],
        "run_s": run_s,  # Replayer.run() whole: rigs, emulator start, ease-ins
        "ease_in_ticks": sum(e.ease_in_ticks for e in replayed.episodes),
        "complete": all(e.complete and e.stopped_by == "done" for e in replayed.episodes),
        "safety_events": dict(Counter(f"{x.kind} {x.joint}" for e in replayed.episodes for x in e.trace.events)),
        "sent_vs_recorded_max_abs": off,
        "realtime_priority": rig.realtime_priority,
        "tick_ms": ticks_ms,
        "fps": dataset.fps,
    }


# --- LeRobot ------------------------------------------------------------------------------


def lerobot(rig_file: Path, root: Path, episodes: int) -> dict[str, dict[str, Any]]:
    """lerobot-replay's loop on BiSOFollower over the virtual rig: paced as written, then without its sleep."""
    from lerobot.datasets import LeRobotDataset
    from lerobot.processor import make_default_robot_action_processor
    from lerobot.robots.bi_so_follower import BiSOFollower, BiSOFollowerConfig
    from lerobot.robots.so_follower import SOFollowerConfig
    from lerobot.utils.constants import ACTION
    from lerobot.utils.robot_utils import precise_sleep

    from policies.commands.replay import ReplayCommandConfig
    from robot.cli import parse_command
    from robot.feetech.calibration_files import calibration_path, calibration_root
    from robot.rig_ports import rig_ports

    rig = parse_command(ReplayCommandConfig, [f"--config_path={rig_file}"]).rig
    files = calibration_path(calibration_root(rig.calibration.dir), RIG_ID, Side.LEFT, Role.FOLLOWER).parent
    results: dict[str, dict[str, Any]] = {}
    with rig_ports(rig) as found:  # the emulator child process, and LeRobot calibration files
        robot = BiSOFollower(
            BiSOFollowerConfig(
                id=RIG_ID,
                calibration_dir=files,  # <id>_left.json, <id>_right.json, as the virtual rig wrote them
                left_arm_config=SOFollowerConfig(port=found.ports["left_follower"]),
                right_arm_config=SOFollowerConfig(port=found.ports["right_follower"]),
            )
        )
        robot.connect(calibrate=False)  # calibrate=True would prompt with input() on a mismatch
        try:
            if not robot.is_calibrated:
                raise RuntimeError("LeRobot's BiSOFollower disagrees with its calibration files; cannot benchmark")
            robot_action_processor = make_default_robot_action_processor()
            for name, paced in ((LEROBOT_PACED, True), (LEROBOT_FREE, False)):
                frames, loop_s, load_s, step_ms, off = 0, 0.0, 0.0, [], 0.0
                for episode in range(episodes):
                    start = time.monotonic()
                    dataset = LeRobotDataset("bench/replay", root=root, episodes=[episode])
                    actions = dataset.select_columns(ACTION)
                    load_s += time.monotonic() - start
                    names = dataset.features[ACTION]["names"]
                    start = time.monotonic()
                    for idx in range(dataset.num_frames):  # lerobot_replay.replay, line for line
                        start_episode_t = time.perf_counter()
                        action_array = actions[idx][ACTION]
                        action = {}
                        for i, joint in enumerate(names):
                            action[joint] = action_array[i]
                        robot_obs = robot.get_observation()
                        processed_action = robot_action_processor((action, robot_obs))
                        sent = robot.send_action(processed_action)
                        dt_s = time.perf_counter() - start_episode_t
                        step_ms.append(dt_s * 1e3)
                        if paced:
                            precise_sleep(max(1 / dataset.fps - dt_s, 0.0))
                        off = max(off, max(abs(float(sent[k]) - float(action[k])) for k in BIMANUAL_KEYS))
                    loop_s += time.monotonic() - start
                    frames += dataset.num_frames
                results[name] = {
                    "frames": frames,
                    "loop_s": loop_s,
                    "load_s": load_s,
                    "step_ms": np.array(step_ms),
                    "sent_vs_recorded_max_abs": off,
                    "fps": dataset.fps,
                }
        finally:
            robot.disconnect()
    return results


# --- the run ------------------------------------------------------------------------------


def row(name: str, result: dict[str, Any], durations: str) -> dict[str, Any]:
    """Throughput of one implementation, with its per-tick durations summarised."""
    ms = np.asarray(result.pop(durations))
    fps = result["frames"] / result["loop_s"]
    return {
        "impl": name,
        **{k: v for k, v in result.items() if k != "fps"},
        "frames_per_s": fps,
        "x_real_time": fps / result["fps"],
        f"{durations}_p50": float(np.percentile(ms, 50)) if ms.size else None,
        f"{durations}_p99": float(np.percentile(ms, 99)) if ms.size else None,
        f"{durations}_samples": [round(float(v), 4) for v in ms],
    }


def summary(rows: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The headline rows, with the keys of `benchmarks.summary.Row` (its ratio is computed there)."""
    paced = rows[LEROBOT_PACED]["x_real_time"]

    def entry(metric: str, unit: str, ours_value: float, anchor: float, anchor_name: str) -> dict[str, Any]:
        return {
            "benchmark": BENCHMARK,
            "metric": metric,
            "unit": unit,
            "ours": round(ours_value, 3),
            "anchor": round(anchor, 3),
            "anchor_name": anchor_name,
            "higher_is_better": True,
            "target": "",
        }

    virtual = rows[OURS_VIRTUAL]
    return [
        entry("replay throughput, dry arms", "× real time", rows[OURS_DRY]["x_real_time"], paced, ANCHOR_NAME),
        entry("replay throughput, virtual rig (fast pace)", "× real time", virtual["x_real_time"], paced, ANCHOR_NAME),
        entry(
            "replay tick rate on the virtual rig, no pacing",
            "frames/s",
            virtual["frames_per_s"],
            rows[LEROBOT_FREE]["frames_per_s"],
            f"{ANCHOR_NAME} loop, sleep removed",
        ),
    ]


def markdown(rows: dict[str, dict[str, Any]]) -> str:
    """One line per implementation."""
    lines = [
        "| replay | frames | loop s | frames/s | × real time | tick p50 ms | tick p99 ms | max abs sent-recorded"
        " | safety events |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in rows.items():
        p50 = r.get("tick_ms_p50", r.get("step_ms_p50"))
        p99 = r.get("tick_ms_p99", r.get("step_ms_p99"))
        events = sum(r["safety_events"].values()) if "safety_events" in r else "–"  # LeRobot's loop has none
        lines.append(
            f"| {name} | {r['frames']} | {r['loop_s']:.2f} | {r['frames_per_s']:.0f} | {r['x_real_time']:.2f}"
            f" | {p50:.2f} | {p99:.2f} | {r['sent_vs_recorded_max_abs']:.3f} | {events} |"
        )
    return "\n".join(lines)


NOTES = """ours: Replayer at fast pace, ticks end to end; LeRobot: lerobot_replay's loop on BiSOFollower, its step
before the sleep (the anchor is the loop as written, paced to the dataset's fps). Sent - recorded: one encoder
step is 0.088 deg. On the virtual rig at fast pace the grippers fall behind their commands; an emulated motor's
load grows with its position error, so the watchdog reads a squeeze and relieves them (safety events, 'relief'),
and what was sent differs there. Every frame is still replayed."""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=2, help="episodes to record and replay (default 2)")
    parser.add_argument("--seconds", type=float, default=8.0, help="seconds per episode (default 8)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 episode of 3 s")
    parser.add_argument("--out", type=Path, default=Path(f"outputs/bench/{BENCHMARK}.json"), help="JSON results file")
    args = parser.parse_args(argv)
    if args.quick:
        args.episodes, args.seconds = 1, 3.0
    if args.episodes < 1 or args.seconds < 1:
        parser.error("--episodes must be >= 1 and --seconds >= 1")
    return args


def main(argv: list[str] | None = None) -> None:
    """Record, replay with each implementation, print the table, write the JSON."""
    args = parse_args(argv)
    out = args.out.resolve()
    started, loadavg_start = time.time(), os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="replay-throughput-") as tmp:
        folder = Path(tmp)
        # Before LeRobot (and huggingface_hub) are imported, here and in so101-record: no network, no ~/.cache.
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["HF_HOME"] = str(folder / "hf")
        os.environ["HF_LEROBOT_HOME"] = str(folder / "lerobot")
        logging.getLogger("lerobot.utils.import_utils").setLevel(logging.ERROR)  # torchcodec's fallback notice
        rig_file, root = write_rig_file(folder), folder / "dataset"
        print(f"recording {args.episodes} x {args.seconds:g} s on the virtual rig ...", file=sys.stderr, flush=True)
        record_s = record(rig_file, root, args.episodes, args.seconds)
        rows: dict[str, dict[str, Any]] = {}
        for name, target in ((OURS_DRY, "dry"), (OURS_VIRTUAL, "virtual")):
            print(f"  {name} ...", file=sys.stderr, flush=True)
            rows[name] = row(name, ours(rig_file, root, target), "tick_ms")
        print("  LeRobot ...", file=sys.stderr, flush=True)
        for name, result in lerobot(rig_file, root, args.episodes).items():
            rows[name] = row(name, result, "step_ms")
    elapsed_s = time.time() - started
    meta = {
        "command": " ".join([Path(sys.executable).name, "-m", f"benchmarks.{BENCHMARK}", *sys.argv[1:]]),
        "started_unix_s": started,
        "elapsed_s": elapsed_s,
        "record_s": record_s,
        "loadavg_start": loadavg_start,
        "loadavg_end": os.getloadavg(),
        "episodes": args.episodes,
        "seconds_per_episode": args.seconds,
        "cameras": {"names": CAMERAS, "height": CAMERA_SIZE[0], "width": CAMERA_SIZE[1], "codec": "h264"},
        "virtual_timing": "wire",
        "python": platform.python_version(),
        "lerobot": version("lerobot"),
        "machine": platform.platform(),
        "cpu_count": os.cpu_count(),
        "euid": os.geteuid(),
    }
    rows_out = list(rows.values())
    headline = summary(rows)
    print(f"Replay throughput, {args.episodes} episode(s) x {args.seconds:g} s recorded on the virtual rig at 30 fps")
    print(f"(load average at start {' '.join(f'{v:.2f}' for v in loadavg_start)})\n")
    print(markdown(rows))
    print("\n" + NOTES)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, "rows": rows_out, "summary": headline}, indent=1))
    print(f"\nwrote {out} ({elapsed_s:.0f} s)")


if __name__ == "__main__":
    main()
