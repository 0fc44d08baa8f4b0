"""Handover smoothness, ours: `so101-deploy --correction.enabled=true` on the virtual rig, against LeRobot's DAgger.

    .venv/bin/python -m benchmarks.handover_ours              # 2 handovers, ~1 min on 2 cores
    .venv/bin/python -m benchmarks.handover_ours --quick      # 1 handover
    .venv/bin/python -m benchmarks.handover_ours --anchor outputs/bench/handover_lerobot.json

    parent: virtual rig as benchmarks/handover_lerobot.py's (wire timing, pre-calibrated, 30 Hz, the
            same bus settings) plus three 96x128 virtual cameras -> tiny ACT checkpoint (random weights)
      -> so101-deploy --correction.enabled=true --record=false on a pseudo-terminal; per handover:
            trace_clear -> policy runs -> c (take over: followers held, leaders ramped to them in the loop)
            -> "you have the arms" -> the scripted correction (~3 s) on both leaders -> c (hand back)
            -> "the policy has the arms again" -> the bus trace -> policy runs ...
      -> benchmarks/handover_trace.py -> table + JSON; summary rows against the anchor's JSON

The anchor is LeRobot's figures from `benchmarks.handover_lerobot` (run it first, in the same session:
`make bench` runs it just before this one). Our tiny ACT needs cameras, which LeRobot's CLI cannot
build on the virtual rig; they are rendered in the deploy process, so ours carries that load too.
The trace is fetched after the hand back, so each one also shows the followers from the release to
0.5 s after the hand back (the person's pose taken over, the policy's ramp back); the 3 s of policy
before each take-over is traced too, for the followers' deadline misses without a handover (the
baseline of this machine's load). Extra figures: benchmarks/handover_ours_figures.py.
"""

import argparse
import json
import re
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml

from benchmarks.handover_lerobot import FPS, LEADERS, RIG_ID, load_calibration, rollout_env
from benchmarks.handover_ours_figures import (
    after_release,
    first_torque_on,
    follower_misses,
    joint_kind_steps,
    largest_follower_step,
    worst,
)
from benchmarks.handover_report import (
    LEROBOT_MODE,
    OURS_MODE,
    comparison_table,
    figures_json,
    run_session,
    summary_rows,
)
from benchmarks.handover_terminal import TerminalCommand, TerminalCommandError
from benchmarks.handover_trace import FOLLOWER_SUFFIX, LEADER_SUFFIX, analyse_handover
from policies.commands.deploy import DeployConfig
from robot.cli import parse_command
from robot.rig_ports import rig_ports
from robot.virtual.client import VirtualRigClient

CAMERAS = ("left_wrist", "right_wrist", "overhead")  # the tiny ACT's cameras (policies/testing/tiny_policies.py)
CAMERA_HEIGHT, CAMERA_WIDTH = 96, 128
START_TIMEOUT_S = 300.0  # importing torch, loading the policy, connecting four arms and three cameras
STEP_TIMEOUT_S = 60.0  # one printed transition
EXIT_TIMEOUT_S = 120.0
TAKE_OVER_WINDOW_S = 0.5  # the followers taking the person's pose: this long after the release
AFTER_HAND_BACK_S = 0.5  # trace kept this long past the hand back: the policy's first goals
PRE_PAUSE_S = 0.5  # trace kept this long before the pause: the followers' last goals before it
IN_CONTROL = "you have the arms"
HANDED_BACK = "the policy has the arms again"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # colours and cursor moves of the live status line
REPORT_CHARS = 2500


def write_rig_file(root: Path) -> Path:
    """handover_lerobot's rig (`rig_config`) as a rig file, plus the tiny ACT's three virtual cameras."""
    cameras = [
        {
            "kind": "virtual",
            "name": name,
            "view": name,
            "width": CAMERA_WIDTH,
            "height": CAMERA_HEIGHT,
            "phase_s": 0.003 * (i + 1),
            "seed": i,
            "capture": {"max_frame_age_s": 1.0},
        }
        for i, name in enumerate(CAMERAS)
    ]
    rig = {
        "id": RIG_ID,
        "fps": FPS,
        "calibration": {"dir": str(root)},
        "bus": {"reply_timeout_ms": 20.0, "read_deadline_ms": 50.0},
        "safety": {"on_exit": "hold"},  # ramp_speed_deg_s stays at its default, 30
        "cameras": cameras,
        "virtual": {"runtime_dir": str(root / "rig"), "timing": "wire", "calibrated": True},
    }
    path = root / "rig.yaml"
    path.write_text(yaml.safe_dump(rig, sort_keys=False))
    return path


def deploy_args(rig_file: Path, checkpoint: Path) -> list[str]:
    """so101-deploy's options: one long rollout, corrections on, nothing recorded."""
    return [
        f"--config_path={rig_file}",
        f"--policy.path={checkpoint}",
        "--policy.device=cpu",
        "--engine.kind=async",
        "--record=false",
        "--session.num_episodes=1",
        "--session.episode_s=300",  # ended with n after the last handover
        "--session.reset_s=0.5",
        "--correction.enabled=true",
    ]


def policy_stretch(client: VirtualRigClient, calibration: dict, seconds: float) -> dict[str, Any]:
    """The policy alone for `seconds`: the followers' deadline misses then, the baseline of the handover's."""
    client.trace_clear()
    start_s = time.monotonic()
    time.sleep(seconds)
    end_s = time.monotonic()
    return {"seconds": end_s - start_s, **follower_misses(client.trace(), calibration, start_s, end_s, FPS)}


def one_handover(
    command: TerminalCommand, client: VirtualRigClient, calibration: dict, index: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Take over, correct, hand back; returns the handover's figures (as JSON) and its bus trace."""
    client.trace_clear()
    time.sleep(PRE_PAUSE_S)
    pause_s = command.press("c")
    command.wait_for(IN_CONTROL, STEP_TIMEOUT_S)
    duration_s = client.play("correction", arms=list(LEADERS))
    deadline = time.monotonic() + duration_s + 30
    while client.operator().get("finished") != "correction":
        if time.monotonic() > deadline:
            raise TerminalCommandError(f"handover {index}: the scripted correction did not finish")
        time.sleep(0.05)
    hand_back_s = command.press("c")
    command.wait_for(HANDED_BACK, STEP_TIMEOUT_S)
    time.sleep(AFTER_HAND_BACK_S)
    records = client.trace()
    first_s = min((float(r["t"]) for r in records), default=float("inf"))
    if first_s > pause_s:
        raise RuntimeError(
            f"handover {index}: the trace starts {first_s - pause_s:.2f} s after the pause: the handover outlasted"
            " the rig's trace buffer (~15 s of four buses)"
        )
    figures = analyse_handover(records, calibration, pause_s, FPS)
    if figures.released_s is None:
        raise RuntimeError(f"handover {index}: no Torque_Enable=0 reached every leader motor;\n{command.tail()}")
    taken = first_torque_on(records, calibration, pause_s)
    result = figures_json(figures) | {
        "hand_back_s": hand_back_s,
        "correction_s": duration_s,
        "by_joint_kind": joint_kind_steps(records, calibration, pause_s, figures.released_s, FPS),
        "after_release": after_release(records, calibration, figures, hand_back_s + AFTER_HAND_BACK_S, FPS),
        "take_over_s": taken,  # the leaders' torque on: the first tick that handled the key
        "largest_follower_step_while_held_deg": None
        if taken is None
        else largest_follower_step(records, calibration, taken, figures.released_s, FPS),
        "largest_follower_step_after_release_deg": largest_follower_step(
            records, calibration, figures.released_s, figures.released_s + TAKE_OVER_WINDOW_S, FPS
        ),
    }
    return result, records


def run_deploy(root: Path, rig_file: Path, checkpoint: Path, args: argparse.Namespace) -> dict[str, Any]:
    """One so101-deploy session with `args.handovers` handovers; raises with its output on failure."""
    argv = [str(Path(sys.executable).with_name("so101-deploy")), *deploy_args(rig_file, checkpoint)]
    rig = parse_command(DeployConfig, argv[1:]).rig  # exactly the rig the command will run
    env = rollout_env(root) | {"COLUMNS": "200", "TERM": "xterm"}  # a live status line: the rollout's progress
    handovers: list[dict[str, Any]] = []
    traces: list[list[dict[str, Any]]] = []
    with rig_ports(rig) as found:  # the emulator child process and LeRobot calibration files
        calibration = load_calibration(root)
        started = time.monotonic()
        with TerminalCommand(argv, env) as command, found.client() as client:
            command.wait_for(r"episode 1/1 REC\s+[1-9]\d*\.\d/", START_TIMEOUT_S)  # the policy has driven for 1 s
            ready_s = time.monotonic() - started
            for index in range(1, args.handovers + 1):
                policy = policy_stretch(client, calibration, args.autonomous_s)
                figures, records = one_handover(command, client, calibration, index)
                handovers.append(figures | {"policy_before": policy})
                traces.append(records)
                print(f"handover {index}: in control after {figures['pause_to_in_control_s']:.2f} s", file=sys.stderr)
            time.sleep(args.autonomous_s)
            command.press("n")  # end the rollout: the session of one episode ends
            code = command.wait(EXIT_TIMEOUT_S)
            if code != 0:
                raise TerminalCommandError(f"so101-deploy exited {code} after its corrections:\n{command.tail()}")
            output = command.output
    return {
        "command": argv,
        "ready_after_s": ready_s,
        "session_s": time.monotonic() - started,
        "timed_out_handovers": output.count("did not reach the followers"),
        "report_tail": ANSI.sub("", output)[-REPORT_CHARS:],  # so101-deploy's closing report
        "handovers": handovers,
        "traces": traces,
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Write the rig file and the checkpoint, then run so101-deploy's corrections."""
    from policies.testing.tiny_policies import write_tiny_act

    with tempfile.TemporaryDirectory(prefix="handover-ours-") as tmp:
        root = Path(tmp)
        checkpoint = write_tiny_act(root / "policy")
        return run_deploy(root, write_rig_file(root), checkpoint, args)


def read_anchor(path: Path) -> tuple[list[dict[str, Any]] | None, dict[str, Any]]:
    """LeRobot's handovers from handover_lerobot's JSON, and where they came from (None: no file)."""
    if not path.exists():
        return None, {"path": str(path), "found": False}
    data = json.loads(path.read_text())
    age_s = time.time() - path.stat().st_mtime
    return data["lerobot"]["handovers"], {"path": str(path), "found": True, "age_s": age_s, "meta": data["meta"]}


def describe(index: int, handover: dict[str, Any]) -> str:
    """Our handover's steps per kind of joint, the followers after the release, and the policy's misses before."""
    split, after, policy = handover["by_joint_kind"], handover["after_release"], handover["policy_before"]
    misses = sum(t["deadline_misses"] for t in after["follower_timing"].values())
    held = handover["largest_follower_step_while_held_deg"]
    parts = [
        f"handover {index}: followers' largest step per write from the take-over tick to the release: "
        f"{'–' if held is None else f'{held:.2f} deg'}",
        f"  body joints' largest step per write from the key: followers "
        f"{worst(split, 'body_max_step_deg', FOLLOWER_SUFFIX):.2f} deg, leaders "
        f"{worst(split, 'body_max_step_deg', LEADER_SUFFIX):.2f} deg; grippers' (% of range): followers "
        f"{worst(split, 'gripper_max_step_percent', FOLLOWER_SUFFIX):.2f}, leaders "
        f"{worst(split, 'gripper_max_step_percent', LEADER_SUFFIX):.2f}",
        f"  followers from the release to {AFTER_HAND_BACK_S} s after the hand back: body "
        f"{worst(after['followers'], 'body_max_step_deg', FOLLOWER_SUFFIX):.2f} deg/write, gripper "
        f"{worst(after['followers'], 'gripper_max_step_percent', FOLLOWER_SUFFIX):.2f} %/write, "
        f"{misses} deadline misses",
        f"  the policy alone for {policy['seconds']:.1f} s before it: {policy['follower_deadline_misses']} follower "
        f"deadline misses (longest gap {1000 * policy['longest_gap_s']:.0f} ms)",
    ]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one handover")
    parser.add_argument("--handovers", type=int, default=None, help="handovers in the session (default 2, quick 1)")
    parser.add_argument("--autonomous-s", type=float, default=3.0, help="policy time before each take-over, s")
    parser.add_argument(
        "--anchor",
        type=Path,
        default=Path("outputs/bench/handover_lerobot.json"),
        help="LeRobot's figures (benchmarks.handover_lerobot), from this session",
    )
    parser.add_argument("--out", type=Path, default=Path("outputs/bench/handover_ours.json"))
    parser.add_argument("--keep-traces", action="store_true", help="keep each handover's bus trace in the JSON")
    args = parser.parse_args(argv)
    if args.handovers is None:
        args.handovers = 1 if args.quick else 2
    result, shared = run_session(args, measure, "benchmarks.handover_ours", argv)
    elapsed_s = shared["elapsed_s"]
    anchor, anchor_meta = read_anchor(args.anchor)
    meta = {
        **shared,
        "fps": FPS,
        "policy": "tiny ACT, random weights, 3 cameras 96x128, chunk 10 (policies/testing/tiny_policies.py)",
        "rig": "virtual, wire timing, pre-calibrated, 3 virtual cameras 96x128",
        "anchor": anchor_meta,
    }
    print(f"Handover, so101-deploy --correction.enabled=true on the virtual rig at {FPS} Hz\n")
    print(comparison_table([(OURS_MODE, result["handovers"]), (LEROBOT_MODE, anchor or [])]))
    for i, h in enumerate(result["handovers"], 1):
        print(describe(i, h))
    if anchor is None:
        print(f"\nno anchor at {args.anchor}: run benchmarks.handover_lerobot first for the comparison rows")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    summary = [asdict(row) for row in summary_rows(anchor, result["handovers"], anchor_age_s=anchor_meta.get("age_s"))]
    args.out.write_text(json.dumps({"meta": meta, "ours": result, "summary": summary}, indent=1))
    print(f"\nwrote {args.out} ({elapsed_s:.0f} s)")


if __name__ == "__main__":
    main()
