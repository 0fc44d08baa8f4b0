"""Bus cycle latency: our `SO101Arm` against stock LeRobot `SOFollower`, on the virtual rig.

One cycle is one sync read of Present_Position plus one sync write of Goal_Position per arm:

    for each transport x timing (pty child process: instant, wire; in-process: instant):
        start the virtual rig (motors pre-calibrated, matching LeRobot files in a temp dir)
        connect SO101Arm and SOFollower to the same follower bus(es), warm each up
        for arms in (left), (left, right):
            alternate blocks of cycles, ours / LeRobot / LeRobot / ours / ...
                ours:    arm.read_joints()       -> arm.write_joints(reading.positions)
                LeRobot: robot.get_observation() -> robot.send_action(observation)
    print a Markdown table (ratio columns: ours / LeRobot), write JSON with every sample

A measurement, not a test: nothing is asserted about speed. The blocks alternate so that both
implementations see the same machine load (this is a shared 2-core VM). Latency statistics cover
every cycle, failed ones included; a failure is a cycle that raised. With two arms the reads of
both arms come first, then the writes, like LeRobot's `BiSOFollower`. In-process rows also report
the time spent inside the emulator (`VirtualRigModel.feed`), which is part of each cycle there.

    .venv/bin/python -m benchmarks.bus_cycle [--cycles 1000] [--warmup 50] [--quick] [--out PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from robot.config import BusConfig, CalibrationConfig
from robot.errors import RobotError
from robot.joints import Role, Side
from robot.virtual.bus import Emission
from robot.virtual.config import TimingMode, VirtualRigConfig
from robot.virtual.inprocess import in_process_ports
from robot.virtual.launcher import VirtualRigProcess
from robot.virtual.precalibrated import calibration_file, calibration_values
from robot.virtual.rig_model import VirtualRigModel

if TYPE_CHECKING:
    from lerobot.robots.so_follower import SOFollower

    from robot.feetech.so101_arm import SO101Arm

RIG_ID = "bench"
FOLLOWERS = {Side.LEFT: "left_follower", Side.RIGHT: "right_follower"}
ARM_SETS = ((Side.LEFT,), (Side.LEFT, Side.RIGHT))
BLOCK_CYCLES = 50  # cycles per alternating block
QUICK_CYCLES = 200
OURS, LEROBOT = "ours", "lerobot"
FAILURES = (RobotError, ConnectionError, RuntimeError, OSError)
STATS = ("p50", "p90", "p99", "max", "mean")


@dataclass
class Samples:
    """What one implementation did in one case."""

    cycle_s: list[float] = field(default_factory=list)
    emulator_s: list[float] = field(default_factory=list)  # in-process only: time inside the emulator
    failures: int = 0
    retries: int = 0  # ours only: extra read attempts inside the read deadline
    errors: list[str] = field(default_factory=list)  # the first few failure messages
    failed_cycles: list[int] = field(default_factory=list)  # indices into cycle_s
    cpu_s: float = 0.0  # this process's CPU time over the measured cycles


class FeedTimer:
    """Wraps a model's `feed` to add up the time spent inside the emulator."""

    def __init__(self, model: VirtualRigModel) -> None:
        self.total_s = 0.0
        self._feed = model.feed
        model.feed = self._timed  # type: ignore[method-assign]

    def _timed(self, bus: str, data: bytes, t_s: float | None = None) -> list[Emission]:
        start = time.perf_counter()
        try:
            return self._feed(bus, data, t_s)
        finally:
            self.total_s += time.perf_counter() - start


# --- the two implementations ------------------------------------------------------------


def ours_cycle(arms: list[SO101Arm]) -> Callable[[], int]:
    """Read all arms, then write each its own positions back; returns extra read attempts."""

    def cycle() -> int:
        readings = [arm.read_joints() for arm in arms]
        for arm, reading in zip(arms, readings, strict=True):
            arm.write_joints(reading.positions)
        return sum(r.attempts - 1 for r in readings)

    return cycle


def lerobot_cycle(robots: list[SOFollower]) -> Callable[[], int]:
    """LeRobot's observe-then-act on each arm, without cameras."""

    def cycle() -> int:
        observations = [robot.get_observation() for robot in robots]
        for robot, observation in zip(robots, observations, strict=True):
            robot.send_action(observation)
        return 0

    return cycle


def connect_both(
    stack: contextlib.ExitStack, ports: dict[str, str], root: Path
) -> tuple[dict[Side, SO101Arm], dict[Side, SOFollower]]:
    """Our arm and LeRobot's robot on each follower port; disconnected when `stack` closes."""
    from lerobot.robots.so_follower import SOFollower, SOFollowerRobotConfig

    from robot.feetech.so101_arm import SO101Arm

    ours: dict[Side, SO101Arm] = {}
    stock: dict[Side, SOFollower] = {}
    for side, bus in FOLLOWERS.items():
        arm = SO101Arm(
            side, Role.FOLLOWER, ports[bus], rig_id=RIG_ID, calibration=CalibrationConfig(dir=root), bus=BusConfig()
        )
        arm.connect()
        stack.callback(arm.disconnect)
        ours[side] = arm
        robot = SOFollower(
            SOFollowerRobotConfig(
                id=f"{RIG_ID}_{side}", calibration_dir=root / "robots" / "so_follower", port=ports[bus]
            )
        )
        robot.connect(calibrate=False)  # calibrate=True would prompt with input() on a mismatch
        stack.callback(robot.disconnect)
        if not robot.is_calibrated:
            raise RuntimeError(f"LeRobot sees {bus}'s motors disagree with its calibration file; cannot benchmark")
        stock[side] = robot
    return ours, stock


# --- measurement ------------------------------------------------------------------------


def run_cycles(cycle: Callable[[], int], count: int, samples: Samples, timer: FeedTimer | None) -> None:
    """Run `count` cycles, appending to `samples` (pass a throwaway Samples to warm up)."""
    cpu_start = time.process_time()
    for _ in range(count):
        emulator_before = timer.total_s if timer else 0.0
        start = time.perf_counter()
        try:
            samples.retries += cycle()
        except FAILURES as e:
            samples.failures += 1
            samples.failed_cycles.append(len(samples.cycle_s))
            if len(samples.errors) < 5:
                samples.errors.append(f"{type(e).__name__}: {e}")
        samples.cycle_s.append(time.perf_counter() - start)
        if timer:
            samples.emulator_s.append(timer.total_s - emulator_before)
    samples.cpu_s += time.process_time() - cpu_start


def measure(
    cycles: dict[str, Callable[[], int]], count: int, warmup: int, timer: FeedTimer | None
) -> dict[str, Samples]:
    """Warm each implementation up, then alternate blocks (ABBA order) until each has `count`."""
    for cycle in cycles.values():
        run_cycles(cycle, warmup, Samples(), timer)
    results = {name: Samples() for name in cycles}
    order = list(cycles)
    done = 0
    while done < count:
        block = min(BLOCK_CYCLES, count - done)
        for name in order:
            run_cycles(cycles[name], block, results[name], timer)
        order.reverse()
        done += block
    return results


def summarise(values_s: list[float]) -> dict[str, float]:
    """p50/p90/p99/max/mean in ms."""
    ms = [v * 1e3 for v in values_s]
    cuts = statistics.quantiles(ms, n=100, method="inclusive")
    return {"p50": cuts[49], "p90": cuts[89], "p99": cuts[98], "max": max(ms), "mean": statistics.fmean(ms)}


def row(case: dict[str, Any], impl: str, samples: Samples) -> dict[str, Any]:
    """One JSON row: the case, the statistics and every sample."""
    n = len(samples.cycle_s)
    result: dict[str, Any] = {**case, "impl": impl, "cycles": n, "failures": samples.failures}
    result["retries"] = samples.retries
    result["ms"] = summarise(samples.cycle_s)
    result["client_cpu_ms_per_cycle"] = samples.cpu_s * 1e3 / n
    if samples.emulator_s:
        result["emulator_ms"] = summarise(samples.emulator_s)
        result["excluding_emulator_ms"] = summarise(
            [c - e for c, e in zip(samples.cycle_s, samples.emulator_s, strict=True)]
        )
    result["errors"] = samples.errors
    result["failed_cycles"] = samples.failed_cycles
    result["samples_ms"] = [round(v * 1e3, 4) for v in samples.cycle_s]
    return result


# --- the cases --------------------------------------------------------------------------


def write_calibration_files(model: VirtualRigModel, root: Path) -> None:
    """LeRobot-format files that match the pre-calibrated motors."""
    for bus in FOLLOWERS.values():
        path = calibration_file(root, RIG_ID, bus)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(calibration_values(model, bus), indent=4))


def bench_rig(
    transport: str,
    timing: TimingMode,
    ports: dict[str, str],
    root: Path,
    args: argparse.Namespace,
    timer: FeedTimer | None,
) -> list[dict[str, Any]]:
    """Every arm set on one running rig."""
    rows = []
    with contextlib.ExitStack() as stack:
        ours, stock = connect_both(stack, ports, root)
        for sides in ARM_SETS:
            case: dict[str, Any] = {"transport": transport, "timing": str(timing), "arms": [str(s) for s in sides]}
            print(f"  {transport} {timing} {'+'.join(case['arms'])} ...", file=sys.stderr, flush=True)
            load_before = os.getloadavg()
            cycles = {
                OURS: ours_cycle([ours[s] for s in sides]),
                LEROBOT: lerobot_cycle([stock[s] for s in sides]),
            }
            results = measure(cycles, args.cycles, args.warmup, timer)
            case["loadavg_before"] = load_before
            case["loadavg_after"] = os.getloadavg()
            rows.extend(row(case, impl, samples) for impl, samples in results.items())
    return rows


def run_all(root: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The pty rig in instant and wire timing, then the in-process transport."""
    rows = []
    for timing in (TimingMode.INSTANT, TimingMode.WIRE):
        config = VirtualRigConfig(runtime_dir=root / f"rig-{timing}", timing=timing, calibrated=True)
        with VirtualRigProcess(config) as rig:
            rows += bench_rig("pty", timing, rig.ports, root, args, None)
    model = VirtualRigModel(
        VirtualRigConfig(runtime_dir=root / "rig-inprocess", timing=TimingMode.INSTANT, calibrated=True)
    )
    timer = FeedTimer(model)
    with in_process_ports(model) as ports:
        rows += bench_rig("in-process", TimingMode.INSTANT, ports, root, args, timer)
    return rows


# --- output -----------------------------------------------------------------------------


def case_key(r: dict[str, Any]) -> tuple[str, str, tuple[str, ...]]:
    """Transport, timing and arm set: what ours and LeRobot are compared on."""
    return (r["transport"], r["timing"], tuple(r["arms"]))


def ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ours / LeRobot for each statistic, per case (and for client-only time, in-process)."""
    by_case: dict[tuple, dict[str, dict[str, Any]]] = {}
    for r in rows:
        by_case.setdefault(case_key(r), {})[r["impl"]] = r
    out = []
    for (transport, timing, arms), impls in by_case.items():
        ours, stock = impls[OURS], impls[LEROBOT]
        ratio = {"transport": transport, "timing": timing, "arms": list(arms)}
        ratio |= {s: ours["ms"][s] / stock["ms"][s] for s in STATS}
        if "excluding_emulator_ms" in ours:
            client_ours, client_stock = ours["excluding_emulator_ms"], stock["excluding_emulator_ms"]
            ratio["excluding_emulator"] = {s: client_ours[s] / client_stock[s] for s in STATS}
        out.append(ratio)
    return out


def footnotes(rows: list[dict[str, Any]], ratio_rows: list[dict[str, Any]]) -> str:
    """Machine load per case, and how much of an in-process cycle is the emulator itself."""
    lines = []
    for ratio in ratio_rows:
        pair = {r["impl"]: r for r in rows if case_key(r) == case_key(ratio)}
        ours, stock = pair[OURS], pair[LEROBOT]
        name = f"{ratio['transport']} {ratio['timing']} {'+'.join(ratio['arms'])}"
        load = f"load average (1 min) {ours['loadavg_before'][0]:.2f} -> {ours['loadavg_after'][0]:.2f}"
        if ours["retries"]:
            load += f"; ours retried {ours['retries']} reads within the read deadline"
        if "excluding_emulator" not in ratio:
            lines.append(f"- {name}: {load}")
            continue
        emu_ours, emu_stock = ours["emulator_ms"]["mean"], stock["emulator_ms"]["mean"]
        client_ours, client_stock = ours["excluding_emulator_ms"]["mean"], stock["excluding_emulator_ms"]["mean"]
        lines.append(
            f"- {name}: {load}; emulator mean {emu_ours:.3f} ms of {ours['ms']['mean']:.3f} (ours),"
            f" {emu_stock:.3f} of {stock['ms']['mean']:.3f} (LeRobot); without it the client mean is"
            f" {client_ours:.3f} vs {client_stock:.3f} ms (× {ratio['excluding_emulator']['mean']:.2f})"
        )
    return "\n".join(lines)


def markdown(rows: list[dict[str, Any]], ratio_rows: list[dict[str, Any]]) -> str:
    """The table: one line per case and implementation; ratio columns on our lines."""
    ratio_by_case = {case_key(r): r for r in ratio_rows}
    head = ["transport", "timing", "arms", "impl", "N", "fail", "p50 ms", "p90 ms", "p99 ms", "max ms", "mean ms"]
    head += [f"{s} ×" for s in STATS] + ["emu mean ms"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        ms: dict[str, float] = r["ms"]
        cells = [r["transport"], r["timing"], "+".join(r["arms"]), r["impl"], r["cycles"], r["failures"]]
        cells += [f"{ms[s]:.3f}" for s in STATS]
        ratio = ratio_by_case[case_key(r)]
        cells += [f"{ratio[s]:.2f}" if r["impl"] == OURS else "" for s in STATS]
        emulator = r.get("emulator_ms")
        cells.append(f"{emulator['mean']:.3f}" if emulator else "")
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=1000, help="measured cycles per row (default 1000)")
    parser.add_argument("--warmup", type=int, default=50, help="discarded cycles per row before measuring")
    parser.add_argument("--quick", action="store_true", help=f"smoke run: {QUICK_CYCLES} cycles per row")
    parser.add_argument("--out", type=Path, default=Path("outputs/bench/bus_cycle.json"), help="JSON results file")
    args = parser.parse_args(argv)
    if args.quick:
        args.cycles = QUICK_CYCLES
    if args.cycles < 2 or args.warmup < 0:
        parser.error("--cycles must be >= 2 and --warmup >= 0")
    return args


def main(argv: list[str] | None = None) -> None:
    """Run every case, print the table, write the JSON."""
    args = parse_args(argv)
    out = args.out.resolve()
    with tempfile.TemporaryDirectory(prefix="bus-cycle-") as tmp:
        root = Path(tmp)
        # Before LeRobot (and huggingface_hub) are imported: no network, no files in ~/.cache.
        os.environ["HF_LEROBOT_CALIBRATION"] = str(root)
        os.environ["HF_HUB_OFFLINE"] = "1"
        write_calibration_files(VirtualRigModel(VirtualRigConfig(calibrated=True)), root)
        started = time.time()
        rows = run_all(root, args)
        elapsed_s = time.time() - started
    ratio_rows = ratios(rows)
    meta = {
        "command": " ".join([Path(sys.executable).name, "-m", "benchmarks.bus_cycle", *sys.argv[1:]]),
        "started_unix_s": started,
        "elapsed_s": elapsed_s,
        "cycles": args.cycles,
        "warmup": args.warmup,
        "block_cycles": BLOCK_CYCLES,
        "python": platform.python_version(),
        "lerobot": version("lerobot"),
        "machine": platform.platform(),
        "cpu_count": os.cpu_count(),
    }
    table = markdown(rows, ratio_rows)
    print(f"Bus cycle latency (sync read + sync write), {args.cycles} cycles per row, ms; × = ours / LeRobot\n")
    print(table)
    print()
    print(footnotes(rows, ratio_rows))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, "ratios": ratio_rows, "rows": rows}, indent=1))
    print(f"\nwrote {out} ({elapsed_s:.0f} s)")


if __name__ == "__main__":
    main()
