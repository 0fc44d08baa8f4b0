"""Handover smoothness, LeRobot's anchor: `lerobot-rollout --strategy.type=dagger` on the virtual rig.

    .venv/bin/python -m benchmarks.handover_lerobot              # 2 handovers, ~55 s on 2 cores (load 3)
    .venv/bin/python -m benchmarks.handover_lerobot --quick      # 1 handover, ~45 s
    .venv/bin/python -m benchmarks.handover_lerobot --handovers 4 --out outputs/bench/handover_4.json

    parent: virtual rig (wire timing, pre-calibrated: LeRobot's calibration files written for the
            `bench` ids) -> tiny state-only TD-MPC checkpoint (benchmarks/handover_policy.py)
      -> lerobot-rollout (its CLI, unmodified) on a pseudo-terminal, corrections-only recording
         to a temp dataset; per handover:
            trace_clear -> policy runs -> space (pause: LeRobot's 2 s teleop_smooth_move_to)
            -> tab as soon as it is paused (queued until the move ends; leaders released)
            -> the scripted hands move the leaders a little -> tab (correction saved)
            -> space (policy again) ...
      -> the bus trace of each handover -> benchmarks/handover_trace.py -> table + JSON

Headless, LeRobot's keyboard controls read the terminal (`TerminalKeyListener`), so the keys are
typed into the command's pseudo-terminal. The tab is pressed as soon as LeRobot logs the pause,
so the pause -> in-control time is the shortest its DAgger allows (the blocking move plus a tick).
No cameras: the CLI can build none that the virtual rig serves (see handover_policy.py).
"""

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks.handover_policy import write_state_only_tdmpc
from benchmarks.handover_report import figures_json, run_session, summary_rows, table
from benchmarks.handover_terminal import TerminalCommand, TerminalCommandError
from benchmarks.handover_trace import HandoverFigures, analyse_handover
from robot.config import BusConfig, CalibrationConfig, RigConfig
from robot.joints import JOINT_NAMES
from robot.rig_ports import FoundPorts, rig_ports
from robot.safety.config import ExitMode, SafetyConfig
from robot.virtual.client import VirtualRigClient
from robot.virtual.config import TimingMode, VirtualRigConfig
from robot.virtual.precalibrated import calibration_file

RIG_ID = "bench"
FPS = 30
TASK = "Fold the cloth"
LEADERS = ("left_leader", "right_leader")
ARMS = ("left_follower", "right_follower", *LEADERS)
START_TIMEOUT_S = 300.0  # importing torch + LeRobot, loading the policy, connecting four arms on a busy 2-core box
STEP_TIMEOUT_S = 60.0  # one logged transition
SAVE_TIMEOUT_S = 120.0  # a correction's episode saved (no video: parquet only)
EXIT_TIMEOUT_S = 180.0
RELEASE_MARGIN_S = 0.6  # trace kept this long past the release, so the followers' next write is in it
PRE_PAUSE_S = 0.5  # trace kept this long before the pause: the followers' last goals before it
OPERATOR_SPEED = 0.5  # the scripted hands play cloth_fold at this speed during a correction


class RolloutStartError(TerminalCommandError):
    """lerobot-rollout ended or stalled before its DAgger loop ran (e.g. a motor reply missed at connect)."""


def rig_config(root: Path) -> RigConfig:
    """The virtual rig in `root`: wire timing, calibrated, LeRobot's files written under `root`."""
    return RigConfig(
        id=RIG_ID,
        calibration=CalibrationConfig(dir=root),
        bus=BusConfig(reply_timeout_ms=20, read_deadline_ms=50),
        safety=SafetyConfig(on_exit=ExitMode.HOLD),
        virtual=VirtualRigConfig(runtime_dir=root / "rig", timing=TimingMode.WIRE, calibrated=True),
    )


def load_calibration(root: Path) -> dict[str, dict[str, Any]]:
    """The four arms' LeRobot calibration files (bus name -> joint -> fields), as LeRobot reads them."""
    return {arm: json.loads(calibration_file(root, RIG_ID, arm).read_text()) for arm in ARMS}


def rollout_argv(root: Path, ports: dict[str, str], checkpoint: Path, dataset: Path, handovers: int) -> list[str]:
    """lerobot-rollout's command line: DAgger, corrections only, on the rig's four ports."""
    return [
        str(Path(sys.executable).with_name("lerobot-rollout")),
        "--strategy.type=dagger",
        f"--strategy.num_episodes={handovers}",  # the run ends after the last correction is saved
        "--robot.type=bi_so_follower",
        f"--robot.id={RIG_ID}",
        f"--robot.calibration_dir={root / 'robots' / 'so_follower'}",
        f"--robot.left_arm_config.port={ports['left_follower']}",
        f"--robot.right_arm_config.port={ports['right_follower']}",
        "--teleop.type=bi_so_leader",
        f"--teleop.id={RIG_ID}",
        f"--teleop.calibration_dir={root / 'teleoperators' / 'so_leader'}",
        f"--teleop.left_arm_config.port={ports['left_leader']}",
        f"--teleop.right_arm_config.port={ports['right_leader']}",
        f"--policy.path={checkpoint}",
        f"--fps={FPS}",
        "--device=cpu",
        "--play_sounds=false",  # no speech synthesiser on a headless box
        "--return_to_initial_position=false",  # a slow move at the end that is not part of the measure
        f"--task={TASK}",
        "--dataset.repo_id=local/rollout_handover",
        f"--dataset.root={dataset}",
        f"--dataset.single_task={TASK}",
        f"--dataset.num_episodes={handovers}",
        "--dataset.push_to_hub=false",
        "--dataset.video=false",
    ]


def rollout_env(root: Path) -> dict[str, str]:
    """This environment without a display (LeRobot then reads keys from its terminal), offline, files in `root`."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    return env | {
        "HF_LEROBOT_CALIBRATION": str(root),
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(root / "hf"),
        "PYTHONUNBUFFERED": "1",
        "TERM": "dumb",
    }


def correct_a_little(client: VirtualRigClient, seconds: float) -> None:
    """The person's correction: the scripted hands move the released leaders for `seconds`, then let go."""
    client.play("cloth_fold", arms=list(LEADERS), speed=OPERATOR_SPEED)
    time.sleep(seconds)
    client.stop()
    for arm in LEADERS:
        for joint in JOINT_NAMES:
            client.set_hand(arm, joint, None)  # let go: a torque-off joint stays where it is


def one_handover(
    command: TerminalCommand,
    client: VirtualRigClient,
    calibration: dict,
    index: int,
    total: int,
    args: argparse.Namespace,
) -> tuple[HandoverFigures, list[dict[str, Any]]]:
    """Pause, take over, correct, hand back; returns the handover's figures and its bus trace."""
    client.trace_clear()
    time.sleep(PRE_PAUSE_S)
    pause_s = command.press(" ")
    command.wait_for(r"Phase transition: autonomous -> paused", STEP_TIMEOUT_S)
    command.press("\t")  # LeRobot queues it while its blocking move runs
    command.wait_for(r"Entering correction mode", STEP_TIMEOUT_S + 10)
    time.sleep(RELEASE_MARGIN_S)
    records = client.trace()
    figures = analyse_handover(records, calibration, pause_s, FPS)
    if figures.released_s is None:
        raise RuntimeError(
            f"handover {index}: LeRobot logged the correction but no Torque_Enable=0 reached every leader motor "
            f"within {RELEASE_MARGIN_S} s; its output ended with:\n{command.tail()}"
        )
    correct_a_little(client, args.correction_s)
    command.press("\t")
    command.wait_for(rf"Correction {index}/{total} saved", SAVE_TIMEOUT_S)
    if index < total:
        command.press(" ")
        command.wait_for(r"Phase transition: paused -> autonomous", STEP_TIMEOUT_S)
        time.sleep(args.autonomous_s)
    return figures, records


def run_dagger(
    root: Path, checkpoint: Path, found: FoundPorts, args: argparse.Namespace, attempt: int
) -> dict[str, Any]:
    """One lerobot-rollout session with `args.handovers` handovers; raises with LeRobot's output on failure."""
    calibration = load_calibration(root)
    dataset = root / f"dataset-{attempt}"
    argv = rollout_argv(root, found.ports, checkpoint, dataset, args.handovers)
    started = time.monotonic()
    handovers: list[HandoverFigures] = []
    traces: list[list[dict[str, Any]]] = []
    with TerminalCommand(argv, rollout_env(root)) as command, found.client() as client:
        try:
            command.wait_for(r"Using terminal keyboard input", START_TIMEOUT_S)
            command.wait_for(r"corrections-only recording started", START_TIMEOUT_S)
        except TerminalCommandError as e:
            raise RolloutStartError(f"lerobot-rollout did not start its DAgger loop: {e}") from e
        ready_s = time.monotonic() - started
        time.sleep(args.autonomous_s)
        for index in range(1, args.handovers + 1):
            figures, records = one_handover(command, client, calibration, index, args.handovers, args)
            handovers.append(figures)
            traces.append(records)
            print(f"handover {index}: in control after {figures.pause_to_in_control_s:.2f} s", file=sys.stderr)
        code = command.wait(EXIT_TIMEOUT_S)
        if code != 0:
            raise TerminalCommandError(f"lerobot-rollout exited {code} after its corrections:\n{command.tail()}")
        slow_warnings = command.output.count("Record loop is running slower")
    return {
        "command": argv,
        "ready_after_s": ready_s,
        "session_s": time.monotonic() - started,
        "slow_loop_warnings_logged": slow_warnings,
        "handovers": [figures_json(f) for f in handovers],
        "traces": traces,
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Start the rig, write the checkpoint, run LeRobot's DAgger (one rerun if it fails before any handover)."""
    with tempfile.TemporaryDirectory(prefix="handover-lerobot-") as tmp:
        root = Path(tmp)
        checkpoint = write_state_only_tdmpc(root / "policy")
        with rig_ports(rig_config(root)) as found:
            try:
                return run_dagger(root, checkpoint, found, args, attempt=1)
            except RolloutStartError as e:
                # Stock LeRobot pings each motor once at connect, with no retry: on a busy 2-core box a
                # reply can miss its ~34 ms wait (tests/test_commands_e2e.py reruns it once, too).
                print(f"lerobot-rollout failed before its first handover; once more:\n{e}", file=sys.stderr)
                result = run_dagger(root, checkpoint, found, args, attempt=2)
                result["retried_after"] = str(e)[-2000:]
                return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one handover")
    parser.add_argument("--handovers", type=int, default=None, help="handovers in the session (default 2, quick 1)")
    parser.add_argument("--autonomous-s", type=float, default=3.0, help="policy time before each pause, s")
    parser.add_argument("--correction-s", type=float, default=1.5, help="the scripted correction's length, s")
    parser.add_argument("--out", type=Path, default=Path("outputs/bench/handover_lerobot.json"))
    parser.add_argument("--keep-traces", action="store_true", help="keep each handover's bus trace in the JSON")
    args = parser.parse_args(argv)
    if args.handovers is None:
        args.handovers = 1 if args.quick else 2
    result, shared = run_session(args, measure, "benchmarks.handover_lerobot", argv)
    elapsed_s = shared["elapsed_s"]
    meta = {
        **shared,
        "fps": FPS,
        "policy": "TD-MPC, random weights, joint state only, use_mpc=false (benchmarks/handover_policy.py)",
        "rig": "virtual, wire timing, pre-calibrated",
    }
    print(f"Handover, LeRobot 0.6.1 DAgger on the virtual rig at {FPS} Hz ({len(result['handovers'])} handovers)\n")
    print(table(result["handovers"]))
    for i, h in enumerate(result["handovers"], 1):
        firsts = [t["first_step_after_release_deg"] for t in h["follower_timing"].values()]
        first = max((f for f in firsts if f is not None), default=None)
        gap = max(t["longest_gap_s"] for t in h["follower_timing"].values())
        print(
            f"handover {i}: longest follower silence {gap:.2f} s; first follower step after the release "
            f"{'–' if first is None else f'{first:.1f} deg'}"
        )
    print(
        f"\nLeRobot logged {result['slow_loop_warnings_logged']} 'running slower' warnings; "
        f"ready {result['ready_after_s']:.0f} s after start"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    summary = [asdict(row) for row in summary_rows(result["handovers"])]
    args.out.write_text(json.dumps({"meta": meta, "lerobot": result, "summary": summary}, indent=1))
    print(f"\nwrote {args.out} ({elapsed_s:.0f} s)")


if __name__ == "__main__":
    main()
