"""Deploy loop, what every side shares: constants, the virtual rig's config, per-tick traces and their statistics.

`Trace` is filled by LeRobot's side (benchmarks/deploy_loop_lerobot.py) and ours
(benchmarks/deploy_loop_ours.py) alike; `tick_stats` turns it into the numbers defined in
benchmarks/deploy_loop.py's docstring; `process_facts` adds peak RSS and CPU seconds by thread.
"""

import contextlib
import os
import resource
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.proc_stats import SCHED_NAMES
from benchmarks.rig_loop import CAMERAS, RIG_ID
from robot.cameras.config import VirtualCameraConfig
from robot.config import BusConfig, CalibrationConfig, RigConfig
from robot.safety.config import ExitMode, SafetyConfig
from robot.virtual.config import TimingMode, VirtualRigConfig

FPS = 30
PERIOD_S = 1.0 / FPS
STALL_FACTOR = 1.5  # a period longer than this many budgets is a stall (LeRobot's starved tick)
TASK = "Fold the cloth"
SCRIPTED_CHUNK, SCRIPTED_LATENCY_S = 50, 0.5
MAX_WARMUP_S = 60.0  # the loops stop `seconds` after their first action; this long more at most


# --- the rig, as both sides see it ------------------------------------------------------


def rig_config(root: Path, height: int, width: int) -> RigConfig:
    """The virtual rig in a temp dir; our bus timeouts as in hardware_configs/virtual.yaml."""
    cameras = tuple(
        VirtualCameraConfig(name=name, view=view, width=width, height=height, fps=FPS, phase_s=phase)
        for name, view, phase in CAMERAS
    )
    return RigConfig(
        id=RIG_ID,
        calibration=CalibrationConfig(dir=root),
        bus=BusConfig(reply_timeout_ms=20, read_deadline_ms=50),
        safety=SafetyConfig(on_exit=ExitMode.HOLD),  # no slow move to rest at the end
        cameras=cameras,
        virtual=VirtualRigConfig(runtime_dir=root / "rig", timing=TimingMode.WIRE, calibrated=True),
    )


def follower_ports(config: RigConfig) -> dict[str, str]:
    """The followers' ports of the rig the parent started (rig_ports finds it running)."""
    from robot.rig_ports import rig_ports

    with rig_ports(config) as found:
        return {name: port for name, port in found.ports.items() if name.endswith("follower")}


# --- per-tick records and their statistics ----------------------------------------------


@dataclass
class Trace:
    """One side's ticks: start, end of work, starved; and its chunks (start, latency)."""

    start_s: list[float] = field(default_factory=list)
    work_end_s: list[float] = field(default_factory=list)
    starved: list[bool] = field(default_factory=list)
    acted: list[bool] = field(default_factory=list)  # an action of the policy's was sent this tick
    observe_s: list[float] = field(default_factory=list)  # reading the followers (LeRobot: and its cameras)
    chunks: list[tuple[float, float]] = field(default_factory=list)
    inline_chunks: bool = True  # chunks are computed inside the tick they start in (sync), else in the background


def tick_stats(trace: Trace) -> dict[str, Any]:
    """Statistics over the ticks from the first one that sent a policy action (see deploy_loop.py's docstring)."""
    first = trace.acted.index(True) + 1 if True in trace.acted else len(trace.acted)
    starts = np.asarray(trace.start_s[first:])
    periods = np.diff(starts)  # tick i's period runs to tick i + 1's start; the last tick has none
    work = (np.asarray(trace.work_end_s[first:]) - starts)[: len(periods)]
    starved = np.asarray(trace.starved[first:], dtype=bool)[: len(periods)]
    observe = np.asarray(trace.observe_s[first:])[: len(periods)]
    deviation_ms = np.abs(periods - PERIOD_S) * 1e3
    stalls = periods > STALL_FACTOR * PERIOD_S
    missed = int(np.sum(np.maximum(0, np.round(periods / PERIOD_S) - 1)))
    chunk_ticks = np.zeros(len(periods), dtype=bool)
    # Chunks begun (inline) or arrived (background) in a tick that has a period, i.e. not the last one.
    in_window = [latency for begin, latency in trace.chunks if len(starts) and starts[0] <= begin < starts[-1]]
    for begin, _ in trace.chunks if trace.inline_chunks else ():
        index = np.searchsorted(starts, begin, side="right") - 1
        if 0 <= index < len(periods) and begin <= trace.work_end_s[first + index]:
            chunk_ticks[index] = True  # the chunk ran inside this tick's work: the loop waited for it
    span_s = float(periods.sum())
    return {
        "inference": "inline" if trace.inline_chunks else "background",
        "ticks": len(periods),
        "seconds": span_s,
        "achieved_hz": len(periods) / span_s,
        "period_abs_dev_p50_ms": float(np.percentile(deviation_ms, 50)),
        "period_abs_dev_p99_ms": float(np.percentile(deviation_ms, 99)),
        "period_abs_dev_max_ms": float(deviation_ms.max()),
        "periods_over_1.5x": int(stalls.sum()),
        "stalls_computing_a_chunk": int((stalls & chunk_ticks).sum()),
        "engine_starved_ticks": int(starved.sum()),
        "missed_deadlines": missed,
        "deadlines_without_fresh_action": int(starved.sum()) + missed,
        "idle_fraction": float(np.sum(periods - work) / span_s),
        "work_p50_ms": float(np.percentile(work, 50) * 1e3),
        "work_p99_ms": float(np.percentile(work, 99) * 1e3),
        "observe_p50_ms": float(np.percentile(observe, 50) * 1e3),
        "observe_p99_ms": float(np.percentile(observe, 99) * 1e3),
        "observe_max_ms": float(observe.max() * 1e3),
        "chunks": len(in_window),
        "chunk_latency_p50_s": float(np.median(in_window)) if in_window else None,
        "chunk_latency_max_s": float(max(in_window)) if in_window else None,
        "first_action_after_s": float(trace.start_s[first - 1] - trace.start_s[0]) if first else None,
        "first_chunk_s": trace.chunks[0][1] if trace.chunks else None,
        "periods_ms": [round(float(p) * 1e3, 3) for p in periods],
    }


def stop_after(seconds: float, stop: Any) -> None:
    """Call `stop` in `seconds` from a timer thread."""
    timer = threading.Timer(seconds, stop)
    timer.daemon = True
    timer.start()


def process_facts(cpu_before_s: float) -> dict[str, Any]:
    """Peak RSS of this process, its CPU seconds since `cpu_before_s`, and CPU seconds by thread name."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    names = {thread.native_id: thread.name for thread in threading.enumerate()}
    by_thread: dict[str, float] = {}
    for stat in Path("/proc/self/task").glob("*/stat"):
        with contextlib.suppress(OSError, ValueError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            policy = SCHED_NAMES.get(int(fields[38]), fields[38])  # the thread's scheduling class, as ps shows it
            name = f"{names.get(int(stat.parent.name), 'unnamed (torch/OpenMP)')} [{policy}]"
            seconds = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            by_thread[name] = round(by_thread.get(name, 0.0) + seconds, 2)
    return {
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "cpu_s": usage.ru_utime + usage.ru_stime - cpu_before_s,
        "cpu_s_by_thread": dict(sorted(by_thread.items(), key=lambda item: -item[1])),
    }


def cpu_s() -> float:
    """This process's CPU seconds so far (user + system)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
