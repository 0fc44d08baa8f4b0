"""Loop pacing and bus time per bimanual tick: ours against stock LeRobot 0.6.1, in one run.

    start the virtual rig (wire timing, pre-calibrated; the leaders play `cloth_fold` in a loop)
    connect our BimanualRig and LeRobot's BiSOLeader + BiSOFollower to the same four buses
    for condition in (idle, 3 cameras, 3 cameras + an AV1 encoder process):
        start the condition's load, let it settle (discarded ticks)
        rounds of six 30 Hz blocks, one per (pacing, step) pair, pacing alternating block by block:
            pacing  ours:    LoopTimer.wait()  (absolute monotonic deadlines)
                    LeRobot: dt = perf_counter() - loop_start; precise_sleep(max(1/fps - dt, 0))
            step    ours:    obs = rig.observe(); rig.act(obs.leader_action())   (buses concurrent)
                    LeRobot: leader.get_action(); follower.send_action(a); follower.get_observation()
                    busy:    spin 4 ms (fixed work: the pacing alone decides the period)
            between blocks: 50 ms pause, then late replies are flushed from the four buses
        a period runs from a tick's start to the next one's (a block's last: to its final sleep's
        end) and belongs to the block's pacing; a step's wall time to the implementation that ran it
    print Markdown tables, write JSON with every period and step

Pacing is reported per step: around each rig tick (the realistic loop; a tick that overruns the
period costs both pacings alike) and around the busy-wait (the timer alone). Every pacing sees
every step under the same load. The two implementations never talk to the buses at the same time,
and the flush keeps one's late replies from answering the other's requests. The encoder is a child
process (benchmarks/encode_load.py) encoding three 480x640 synthetic streams at 30 fps with
libsvtav1 (preset 12, crf 30, g 2), at normal priority: as root it runs without CAP_SYS_NICE, since
SVT-AV1 otherwise makes its workers SCHED_FIFO 99 (see ../shared/notes/anchors-measured.md); the
JSON records its threads' scheduling classes.

A measurement, not a test: nothing is asserted about speed.

    .venv/bin/python -m benchmarks.rig_loop [--seconds 72] [--block-s 4] [--quick] [--wait-quiet S] [--out PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from benchmarks.encode_load import encoder_process
from benchmarks.lerobot_arms import connected_lerobot_arms
from benchmarks.proc_stats import Meter, child_pid, thread_classes
from benchmarks.rig_loop_report import BUSY, LEROBOT, OURS, TARGETS, bus_table, machine_table, notes, pacing_table
from robot.cameras.config import VirtualCameraConfig
from robot.cameras.factory import make_cameras
from robot.cameras.virtual.joint_sources import fold_source
from robot.config import BusConfig, CalibrationConfig, RigConfig
from robot.joints import CameraRole
from robot.loop_timer import LoopTimer
from robot.realtime import realtime_thread
from robot.rig import capture_below
from robot.safety.config import ExitMode, SafetyConfig
from robot.virtual.config import TimingMode, VirtualRigConfig

if TYPE_CHECKING:
    from robot.cameras.camera import Camera

FPS = 30.0
PERIOD_S = 1.0 / FPS
RIG_ID = "bench"
PACINGS = (OURS, LEROBOT)
STEPS = (OURS, LEROBOT, BUSY)  # our rig's tick, LeRobot's bimanual tick, a fixed busy-wait
BUSY_STEP_S = 0.004  # the busy-wait step: a constant amount of loop work, so only the pacing varies
# Pacing is reported per loop step: a tick that overruns the period (LeRobot's, under load) would
# otherwise hide what the timer does around the other step.
STEP_GROUPS = {"our rig tick": (OURS,), "LeRobot's rig tick": (LEROBOT,), "4 ms busy-wait": (BUSY,)}
CAMERAS = (  # name, view, phase offset (s): three free-running cameras a third of a period apart
    ("overhead", CameraRole.OVERHEAD, 0.0),
    ("left_wrist", CameraRole.LEFT_WRIST, 0.011),
    ("right_wrist", CameraRole.RIGHT_WRIST, 0.022),
)
DRAIN_S = 0.05  # pause between blocks before late replies are flushed, s
SETTLE_S = {"idle": 1.0, "cameras": 1.0, "cameras+encode": 3.0}  # discarded ticks before measuring
QUIET_LOADAVG = 0.6  # --wait-quiet's threshold, as the anchors' runner used
BUS_ANCHOR_MS = {"median": 3.17, "p99": 7.0}  # issue 3 / anchors-measured.md A (prototype emulator)


# --- one condition: blocks of ticks ----------------------------------------------------


@dataclass
class Trace:
    """Every tick of one condition, in order."""

    period_s: list[float] = field(default_factory=list)  # this tick's start to the next's (or the block's end)
    pacing: list[str] = field(default_factory=list)  # the pacing that slept after the tick
    step: list[str] = field(default_factory=list)  # the implementation whose step ran
    step_s: list[float] = field(default_factory=list)  # wall time of the step
    read_s: list[float] = field(default_factory=list)  # ours: observe()'s concurrent read; NaN for LeRobot
    failed: list[bool] = field(default_factory=list)
    errors: dict[str, list[str]] = field(default_factory=lambda: {step: [] for step in STEPS})
    # Per step, over our pacing's blocks: LoopTimer's overruns and skipped deadlines, and the
    # periods and span from each block's second tick to its last. Every block's first tick is due
    # at once (never late) and its end as late as any wake-up, so each block charges one wake-up
    # delay to the rate; that span leaves this artifact of short blocks out.
    timer: dict[str, list[float]] = field(default_factory=lambda: {step: [0, 0, 0, 0.0] for step in STEPS})
    stale_bytes: int = 0  # late replies flushed from the buses between blocks


Step = Callable[[], float]  # runs one tick's bus work; returns the read phase's time (s) or NaN


def timed_step(trace: Trace, name: str, step: Step) -> None:
    start = time.perf_counter()
    read_s, failed = math.nan, False
    try:
        read_s = step()
    except Exception as e:  # any failure counts against the step's implementation; the loop goes on
        failed = True
        if len(trace.errors[name]) < 5:
            trace.errors[name].append(f"{type(e).__name__}: {e}")
    trace.step_s.append(time.perf_counter() - start)
    trace.read_s.append(read_s)
    trace.failed.append(failed)


REALTIME_PRIORITY = RigConfig.__dataclass_fields__["realtime_priority"].default


def run_block(trace: Trace, pacing: str, step_name: str, step: Step, ticks: int) -> None:
    """`ticks` ticks of `step` paced by `pacing`; the last period ends when its final sleep does."""
    from lerobot.utils.robot_utils import precise_sleep

    starts: list[float] = []
    if pacing == OURS:
        # Our control loop's thread, as `ControlLoop.run` sets it up: real-time when permitted.
        with realtime_thread(REALTIME_PRIORITY):
            timer = LoopTimer(FPS)
            timer.start()  # the first tick is due now
            for _ in range(ticks):
                starts.append(timer.wait().start_s)
                timed_step(trace, step_name, step)
            end_s = timer.wait().start_s  # the tick that would come next
        counts = (timer.overruns, timer.skipped, ticks - 2, starts[-1] - starts[1])
        trace.timer[step_name] = [a + b for a, b in zip(trace.timer[step_name], counts, strict=True)]
    else:
        for _ in range(ticks):  # lerobot_record.record_loop's pacing, line for line
            start_loop_t = time.perf_counter()
            starts.append(time.monotonic())
            timed_step(trace, step_name, step)
            dt_s = time.perf_counter() - start_loop_t
            precise_sleep(max(PERIOD_S - dt_s, 0.0))
        end_s = time.monotonic()
    trace.period_s.extend(np.diff([*starts, end_s]).tolist())
    trace.pacing.extend([pacing] * ticks)
    trace.step.extend([step_name] * ticks)


def run_condition(steps: dict[str, Step], drain: Callable[[], int], seconds: float, block_s: float) -> Trace:
    """Rounds of six blocks until at least `seconds` have been measured, the buses drained between."""
    trace = Trace()
    ticks = max(3, round(block_s * FPS))
    rounds = max(1, math.ceil(seconds / block_s / 6))
    for index in range(6 * rounds):
        # Pacing alternates block by block; each round runs all six (pacing, step) pairs, and the
        # next round shifts which step follows which.
        pacing, step_name = PACINGS[index % 2], STEPS[(index + index // 6) % 3]
        trace.stale_bytes += drain()
        run_block(trace, pacing, step_name, steps[step_name], ticks)
    return trace


def settle(steps: dict[str, Step], drain: Callable[[], int], seconds: float) -> None:
    """Ticks of each step, discarded: the load and the buses reach their steady state."""
    for name, step in steps.items():
        drain()
        run_block(Trace(), OURS, name, step, max(3, round(seconds * FPS / len(steps))))


# --- the two implementations ------------------------------------------------------------


@contextlib.contextmanager
def connected_rigs(root: Path) -> Iterator[tuple[dict[str, Step], Callable[[], int], int | None]]:
    """The virtual rig with both implementations connected; yields their steps, a drain, the emulator pid."""
    from robot.rig import BimanualRig
    from robot.rig_ports import rig_ports

    config = RigConfig(
        id=RIG_ID,
        calibration=CalibrationConfig(dir=root),
        bus=BusConfig(reply_timeout_ms=20, read_deadline_ms=50),
        safety=SafetyConfig(on_exit=ExitMode.HOLD),  # no slow move to rest at the end
        # The emulated buses at real-time priority, as the virtual rig file runs them (one below the loop):
        # real buses are not slowed by the host's load (both implementations talk to the same emulator).
        virtual=VirtualRigConfig(
            runtime_dir=root / "rig", timing=TimingMode.WIRE, calibrated=True, realtime_priority=REALTIME_PRIORITY - 1
        ),
    )
    with contextlib.ExitStack() as stack:
        found = stack.enter_context(rig_ports(config))
        emulator_pid = child_pid("robot.virtual.server")
        with found.client() as client:
            client.play("cloth_fold", loop=True)
        ports = found.ports
        rig = stack.enter_context(BimanualRig(config, ports))
        follower, leader = stack.enter_context(connected_lerobot_arms(RIG_ID, root, ports))

        def ours() -> float:
            observation = rig.observe()
            rig.act(observation.leader_action())
            return observation.bus_time_s

        def lerobot() -> float:
            action = leader.get_action()
            follower.send_action(action)
            follower.get_observation()
            return math.nan

        def drain() -> int:
            """Wait, then flush late replies, so neither implementation reads the other's.

            A reply that misses its read's timeout arrives later; LeRobot's SDK never flushes
            input, so it would take such a reply for its next request and stay one reply behind.
            """
            time.sleep(DRAIN_S)
            stale = 0
            for arm in rig.arms.values():
                port = arm.device.bus.port_handler.ser  # the tty's input queue, shared by both clients
                stale += port.in_waiting
                port.reset_input_buffer()
            return stale

        yield {OURS: ours, LEROBOT: lerobot, BUSY: busy_wait}, drain, emulator_pid


def busy_wait() -> float:
    """The fixed step: spin for BUSY_STEP_S of wall time, holding the CPU as a computing step would."""
    end = time.perf_counter() + BUSY_STEP_S
    while time.perf_counter() < end:
        pass
    return math.nan


# --- loads ------------------------------------------------------------------------------


@contextlib.contextmanager
def running_cameras() -> Iterator[dict[str, Camera]]:
    """Three virtual 480x640 cameras at 30 fps, each rendering in its own capture thread.

    Their capture threads get the priority `BimanualRig` gives its cameras (just below the loop's).
    """
    configs = [
        capture_below(
            VirtualCameraConfig(name=name, view=view, width=640, height=480, fps=FPS, phase_s=phase), REALTIME_PRIORITY
        )
        for name, view, phase in CAMERAS
    ]
    cameras = make_cameras(configs, joint_source=fold_source())
    with contextlib.ExitStack() as stack:
        for camera in cameras.values():
            stack.enter_context(camera)
        yield cameras


# --- statistics -------------------------------------------------------------------------


def pacing_stats(trace: Trace, pacing: str, steps: tuple[str, ...]) -> dict[str, Any]:
    """Periods slept by one pacing around `steps`: rate (periods / their sum), deviation from 1/fps."""
    mine = (np.asarray(trace.pacing) == pacing) & np.isin(trace.step, steps)
    periods = np.asarray(trace.period_s)[mine]
    deviation_ms = np.abs(periods - PERIOD_S) * 1e3
    achieved_hz = len(periods) / periods.sum()
    result = {
        "periods": len(periods),
        "achieved_hz": achieved_hz,
        "rate_error_pct": 100 * (achieved_hz / FPS - 1),
        "period_median_ms": float(np.median(periods)) * 1e3,
        "abs_dev_p50_ms": float(np.percentile(deviation_ms, 50)),
        "abs_dev_p99_ms": float(np.percentile(deviation_ms, 99)),
        "abs_dev_max_ms": float(deviation_ms.max()),
        "over_1.1x_pct": 100 * float(np.mean(periods > 1.1 * PERIOD_S)),
        "over_1.5x": int(np.sum(periods > 1.5 * PERIOD_S)),
        "under_0.9x": int(np.sum(periods < 0.9 * PERIOD_S)),
        "periods_ms": [round(p * 1e3, 4) for p in periods],
    }
    if pacing == OURS:
        overruns, skipped, inner_periods, inner_span_s = (sum(trace.timer[s][i] for s in steps) for i in range(4))
        result["loop_timer_overruns"], result["loop_timer_skipped"] = int(overruns), int(skipped)
        result["steady_rate_error_pct"] = 100 * (inner_periods / inner_span_s / FPS - 1)
    return result


def step_stats(trace: Trace, step: str) -> dict[str, Any]:
    """Wall time of one implementation's steps (failed ones included)."""
    mine = np.asarray(trace.step) == step
    ms = np.asarray(trace.step_s)[mine] * 1e3
    result = {
        "ticks": len(ms),
        "failures": int(np.sum(np.asarray(trace.failed)[mine])),
        "errors": trace.errors[step],
        **{f"p{q}_ms": float(np.percentile(ms, q)) for q in (50, 90, 99)},
        "max_ms": float(ms.max()),
        "mean_ms": float(ms.mean()),
    }
    read_ms = np.asarray(trace.read_s)[mine] * 1e3
    if not np.isnan(read_ms).all():
        result["read_p50_ms"] = float(np.nanpercentile(read_ms, 50))
        result["read_p99_ms"] = float(np.nanpercentile(read_ms, 99))
    result["samples_ms"] = [round(float(v), 4) for v in ms]
    return result


# --- the run ----------------------------------------------------------------------------


def measure(
    condition: str,
    rigs: tuple[dict[str, Step], Callable[[], int]],
    args: argparse.Namespace,
    pids: dict[str, int | None],
    cameras: dict,
) -> dict[str, Any]:
    """Settle, then measure one condition with its machine bookkeeping."""
    print(f"  {condition}: {args.seconds:.0f} s ...", file=sys.stderr, flush=True)
    steps, drain = rigs
    settle(steps, drain, SETTLE_S[condition])
    meter = Meter(pids, cameras)
    trace = run_condition(steps, drain, args.seconds, args.block_s)
    result = {
        "condition": condition,
        "pacing": {group: {p: pacing_stats(trace, p, steps) for p in PACINGS} for group, steps in STEP_GROUPS.items()},
        "step": {s: step_stats(trace, s) for s in (OURS, LEROBOT)},
        "machine": meter.finish(),
        "stale_bytes_flushed_between_blocks": trace.stale_bytes,
    }
    return result


def run_all(root: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    results = []
    with connected_rigs(root) as (steps, drain, emulator_pid):
        rigs = steps, drain
        pids: dict[str, int | None] = {"this_process": os.getpid(), "emulator": emulator_pid}
        results.append(measure("idle", rigs, args, pids, {}))
        with running_cameras() as cameras:
            results.append(measure("cameras", rigs, args, pids, cameras))
            with encoder_process(root) as encoder:
                result = measure("cameras+encode", rigs, args, {**pids, "encoder": encoder["pid"]}, cameras)
                result["encoder_thread_classes"] = thread_classes(encoder["pid"])
            done_s = np.asarray(encoder.pop("frame_done_s", []))
            window = result["machine"]["started_s"], result["machine"]["ended_s"]
            in_window = int(np.sum((done_s >= window[0]) & (done_s < window[1])))
            encoder["fps_while_measuring"] = in_window / (window[1] - window[0])
            result["encoder"] = encoder
            results.append(result)
    return results


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=72.0, help="measured seconds per condition (default 72)")
    parser.add_argument("--block-s", type=float, default=4.0, help="seconds per alternating block (default 4)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 6 s per condition in 1-s blocks")
    parser.add_argument("--out", type=Path, default=Path("outputs/bench/rig_loop.json"), help="JSON results file")
    parser.add_argument(
        "--wait-quiet", type=float, default=0.0, help="first wait up to this many s for a 1-min load average < 0.6"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.block_s = 6.0, 1.0
    if args.seconds <= 0 or args.block_s * FPS < 3:
        parser.error("--seconds must be > 0 and --block-s at least 3 periods")
    return args


def main(argv: list[str] | None = None) -> None:
    """Run the three conditions, print the tables, write the JSON."""
    args = parse_args(argv)
    out = args.out.resolve()
    wait_until = time.monotonic() + args.wait_quiet
    while os.getloadavg()[0] >= QUIET_LOADAVG and time.monotonic() < wait_until:
        time.sleep(1.0)
    with tempfile.TemporaryDirectory(prefix="rig-loop-") as tmp:
        root = Path(tmp)
        # Before LeRobot (and huggingface_hub) are imported: no network, no files in ~/.cache.
        os.environ["HF_LEROBOT_CALIBRATION"] = str(root)
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["HF_HOME"] = str(root / "hf")
        loadavg_start, started = os.getloadavg(), time.time()
        results = run_all(root, args)
        elapsed_s, loadavg_end = time.time() - started, os.getloadavg()
    meta = {
        "command": " ".join([Path(sys.executable).name, "-m", "benchmarks.rig_loop", *sys.argv[1:]]),
        "started_unix_s": started,
        "elapsed_s": elapsed_s,
        "loadavg_start": loadavg_start,
        "loadavg_end": loadavg_end,
        "seconds_per_condition": args.seconds,
        "block_s": args.block_s,
        "wait_quiet_s": args.wait_quiet,
        "fps": FPS,
        "timing": "wire",
        "targets": TARGETS,
        "bus_anchor_ms": BUS_ANCHOR_MS,
        "python": platform.python_version(),
        "lerobot": version("lerobot"),
        "machine": platform.platform(),
        "cpu_count": os.cpu_count(),
        "euid": os.geteuid(),
    }
    print(f"Loop pacing at {FPS:.0f} Hz, {args.seconds:.0f} s per condition, {args.block_s:g}-s alternating blocks")
    print(f"(load average at start {' '.join(f'{v:.2f}' for v in loadavg_start)}, ", end="")
    print(f"at end {' '.join(f'{v:.2f}' for v in loadavg_end)})\n")
    print(pacing_table(results))
    print("\nBus time per bimanual tick, virtual rig in wire timing, ms (LeRobot anchor on the prototype emulator:")
    print(f"median {BUS_ANCHOR_MS['median']} ms, p99 {BUS_ANCHOR_MS['p99']} ms; target LeRobot ÷ ours ≥ 2)\n")
    print(bus_table(results))
    print("\nMachine\n")
    print(machine_table(results))
    print()
    print(notes(results))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, "conditions": results}, indent=1))
    print(f"\nwrote {out} ({elapsed_s:.0f} s)")


if __name__ == "__main__":
    main()
