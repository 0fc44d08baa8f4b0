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
process (this file with `--encode-load`) encoding three 480x640 synthetic streams at 30 fps with
libsvtav1 (preset 12, crf 30, g 2), at normal priority: as root it runs without CAP_SYS_NICE, since
SVT-AV1 otherwise makes its workers SCHED_FIFO 99 (see ../shared/notes/anchors-measured.md); the
JSON records its threads' scheduling classes.

A measurement, not a test: nothing is asserted about speed.

    .venv/bin/python -m benchmarks.rig_loop [--seconds 72] [--block-s 4] [--quick] [--wait-quiet S] [--out PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from robot.cameras.config import VirtualCameraConfig, VirtualView
from robot.cameras.errors import CameraError
from robot.cameras.factory import make_cameras
from robot.cameras.virtual.joint_sources import fold_source
from robot.config import BusConfig, CalibrationConfig, RigConfig
from robot.loop_timer import LoopTimer
from robot.realtime import realtime_thread
from robot.safety.config import ExitMode, SafetyConfig
from robot.virtual.bus import TimingMode
from robot.virtual.rig_model import VirtualRigConfig

if TYPE_CHECKING:
    from robot.cameras.camera import Camera

FPS = 30.0
PERIOD_S = 1.0 / FPS
RIG_ID = "bench"
OURS, LEROBOT, BUSY = "ours", "lerobot", "busy"
PACINGS = (OURS, LEROBOT)
STEPS = (OURS, LEROBOT, BUSY)  # our rig's tick, LeRobot's bimanual tick, a fixed busy-wait
BUSY_STEP_S = 0.004  # the busy-wait step: a constant amount of loop work, so only the pacing varies
# Pacing is reported per loop step: a tick that overruns the period (LeRobot's, under load) would
# otherwise hide what the timer does around the other step.
STEP_GROUPS = {"our rig tick": (OURS,), "LeRobot's rig tick": (LEROBOT,), "4 ms busy-wait": (BUSY,)}
CAMERAS = (  # name, view, phase offset (s): three free-running cameras a third of a period apart
    ("overhead", VirtualView.OVERHEAD, 0.0),
    ("left_wrist", VirtualView.LEFT_WRIST, 0.011),
    ("right_wrist", VirtualView.RIGHT_WRIST, 0.022),
)
DRAIN_S = 0.05  # pause between blocks before late replies are flushed, s
SETTLE_S = {"idle": 1.0, "cameras": 1.0, "cameras+encode": 3.0}  # discarded ticks before measuring
ENCODE_WIDTH, ENCODE_HEIGHT, ENCODE_STREAMS = 640, 480, 3
ENCODE_OPTIONS = {"preset": "12", "crf": "30", "g": "2"}  # LeRobot's VideoEncoderConfig defaults
QUIET_LOADAVG = 0.6  # --wait-quiet's threshold, as the anchors' runner used
CAP_SYS_NICE, PR_CAPBSET_DROP = 23, 24
SCHED_NAMES = {0: "TS", 1: "FF", 2: "RR", 3: "B", 5: "IDL", 6: "DLN"}
TARGETS = {"rate_error_pct": 0.01, "p99_ms": {"idle": 0.3, "cameras": 2.0, "cameras+encode": 2.0}}
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
    from lerobot.robots.bi_so_follower import BiSOFollower, BiSOFollowerConfig
    from lerobot.robots.so_follower import SOFollowerConfig
    from lerobot.teleoperators.bi_so_leader import BiSOLeader, BiSOLeaderConfig
    from lerobot.teleoperators.so_leader import SOLeaderConfig

    from robot.rig import BimanualRig
    from robot.rig_ports import rig_ports

    config = RigConfig(
        id=RIG_ID,
        calibration=CalibrationConfig(dir=root),
        bus=BusConfig(reply_timeout_ms=20, read_deadline_ms=50),
        safety=SafetyConfig(on_exit=ExitMode.HOLD),  # no slow move to rest at the end
        virtual=VirtualRigConfig(runtime_dir=root / "rig", timing=TimingMode.WIRE, calibrated=True),
    )
    with contextlib.ExitStack() as stack:
        found = stack.enter_context(rig_ports(config))
        emulator_pid = child_pid("robot.virtual.server")
        with found.client() as client:
            client.play("cloth_fold", loop=True)
        ports = found.ports
        rig = stack.enter_context(BimanualRig(config, ports))
        follower = BiSOFollower(
            BiSOFollowerConfig(
                id=RIG_ID,
                calibration_dir=root / "robots" / "so_follower",
                left_arm_config=SOFollowerConfig(port=ports["left_follower"]),
                right_arm_config=SOFollowerConfig(port=ports["right_follower"]),
            )
        )
        leader = BiSOLeader(
            BiSOLeaderConfig(
                id=RIG_ID,
                calibration_dir=root / "teleoperators" / "so_leader",
                left_arm_config=SOLeaderConfig(port=ports["left_leader"]),
                right_arm_config=SOLeaderConfig(port=ports["right_leader"]),
            )
        )
        for device in (follower, leader):
            device.connect(calibrate=False)  # calibrate=True would prompt with input() on a mismatch
            stack.callback(device.disconnect)
            if not device.is_calibrated:
                raise RuntimeError(f"LeRobot's {device.name} disagrees with its calibration files; cannot benchmark")

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
    """Three virtual 480x640 cameras at 30 fps, each rendering in its own capture thread."""
    configs = [
        VirtualCameraConfig(name=name, view=view, width=640, height=480, fps=FPS, phase_s=phase)
        for name, view, phase in CAMERAS
    ]
    cameras = make_cameras(configs, joint_source=fold_source())
    with contextlib.ExitStack() as stack:
        for camera in cameras.values():
            stack.enter_context(camera)
        yield cameras


def sys_nice_dropper() -> Callable[[], None]:
    """A preexec_fn that drops CAP_SYS_NICE from the bounding set (libc is loaded here, before fork)."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def drop() -> None:
        if prctl(PR_CAPBSET_DROP, CAP_SYS_NICE, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP, CAP_SYS_NICE) failed")

    return drop


@contextlib.contextmanager
def encoder_process(work_dir: Path) -> Iterator[dict[str, Any]]:
    """The encode load in a child process at normal priority; yields a dict filled in at the end."""
    command = [sys.executable, "-m", "benchmarks.rig_loop", "--encode-load", str(work_dir)]
    info: dict[str, Any] = {"euid": os.geteuid()}
    preexec: Callable[[], None] | None = None
    if os.geteuid() == 0 and shutil.which("setpriv"):
        command = ["setpriv", "--bounding-set=-sys_nice", "--inh-caps=-sys_nice", "--", *command]
        info["sys_nice_dropped_by"] = "setpriv --bounding-set=-sys_nice --inh-caps=-sys_nice"
    elif os.geteuid() == 0:
        preexec = sys_nice_dropper()
        info["sys_nice_dropped_by"] = "prctl(PR_CAPBSET_DROP, CAP_SYS_NICE) before exec"
    repo = Path(__file__).resolve().parents[1]
    with open(work_dir / "encoder.stderr", "wb") as stderr:
        child = subprocess.Popen(
            command, cwd=repo, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, preexec_fn=preexec
        )
    info["pid"] = child.pid
    time.sleep(0.5)
    if child.poll() is not None:
        tail = (work_dir / "encoder.stderr").read_text(errors="replace")[-1500:]
        raise RuntimeError(f"the encoder child exited at once (rc {child.returncode}): {tail}")
    try:
        yield info
    finally:
        try:
            out, _ = child.communicate(timeout=20)  # closes its stdin: the child stops at end of input
            info |= json.loads(out.decode().strip().splitlines()[-1])
        except (subprocess.TimeoutExpired, json.JSONDecodeError, IndexError):
            child.kill()
            child.wait()
            tail = (work_dir / "encoder.stderr").read_text(errors="replace")[-1500:]
            info["error"] = f"the encoder child ended without a report (rc {child.returncode}): {tail}"


def encode_load(work_dir: Path) -> None:
    """Child: encode three synthetic 480x640 streams at 30 fps until stdin closes; print a JSON line."""
    import av

    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:ENCODE_HEIGHT, 0:ENCODE_WIDTH]
    base = np.stack([x * 255 // ENCODE_WIDTH, y * 255 // ENCODE_HEIGHT, (x + y) * 255 // 1120], axis=-1)
    noisy = [  # per stream, 8 frames of gradient +-12 noise, cycled; a moving block on top
        [np.clip(base + rng.integers(-12, 13, base.shape), 0, 255).astype(np.uint8) for _ in range(8)]
        for _ in range(ENCODE_STREAMS)
    ]
    outputs = []
    for index in range(ENCODE_STREAMS):
        container = av.open(str(work_dir / f"stream{index}.mp4"), "w")
        stream = container.add_stream("libsvtav1", rate=int(FPS), options=dict(ENCODE_OPTIONS))
        stream.width, stream.height, stream.pix_fmt = ENCODE_WIDTH, ENCODE_HEIGHT, "yuv420p"
        outputs.append((container, stream))
    cpu_start, started = time.process_time(), time.monotonic()
    anchor, k, frames, reanchors = started, 0, 0, 0
    done_s: list[float] = []  # when each frame (all streams) was encoded: the parent's window fps
    while not stop.is_set():
        deadline = anchor + k * PERIOD_S
        now = time.monotonic()
        if now < deadline:
            time.sleep(deadline - now)
        elif now > deadline + PERIOD_S:  # fell behind a whole frame: re-anchor, no burst
            anchor, k, reanchors = now, 0, reanchors + 1
        for index, (container, stream) in enumerate(outputs):
            image = noisy[index][frames % 8].copy()
            top, left = (frames * 3) % (ENCODE_HEIGHT - 64), (frames * 5) % (ENCODE_WIDTH - 64)
            image[top : top + 64, left : left + 64] = 255 - 60 * index
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            frame.pts = frames
            container.mux(stream.encode(frame))
        frames, k = frames + 1, k + 1
        done_s.append(round(time.monotonic(), 4))
    elapsed_s, cpu_s = time.monotonic() - started, time.process_time() - cpu_start
    for container, stream in outputs:
        container.mux(stream.encode(None))
        container.close()
    report = {"frames_per_stream": frames, "seconds": elapsed_s, "fps": frames / elapsed_s, "reanchors": reanchors}
    report |= {"cpu_cores": cpu_s / elapsed_s, "frame_done_s": done_s}
    print(json.dumps(report), flush=True)


def thread_classes(pid: int) -> dict[str, int]:
    """How many of a process's threads run under each scheduling policy (ps's CLS names)."""
    counts: dict[str, int] = {}
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            name = SCHED_NAMES.get(int(fields[38]), fields[38])
            if name in ("FF", "RR"):
                name += f"/{fields[37]}"  # with its real-time priority
            counts[name] = counts.get(name, 0) + 1
    return counts


# --- machine bookkeeping ----------------------------------------------------------------


def child_pid(needle: str) -> int | None:
    """A child of this process whose command line contains `needle`."""
    for children in Path(f"/proc/{os.getpid()}/task").glob("*/children"):
        for pid in children.read_text().split():
            with contextlib.suppress(OSError):
                if needle in Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " "):
                    return int(pid)
    return None


def process_cpu_s(pid: int | None) -> float:
    """User + system CPU seconds of a process so far (NaN if it is gone)."""
    if pid is None:
        return math.nan
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return math.nan
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_jiffies() -> list[int]:
    """The machine's aggregate /proc/stat cpu line."""
    return [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]


@dataclass
class Meter:
    """Machine state over one condition."""

    pids: dict[str, int | None]
    cameras: dict[str, Camera]
    started_s: float = field(default_factory=time.monotonic)
    loadavg_before: tuple[float, ...] = field(default_factory=os.getloadavg)
    jiffies: list[int] = field(default_factory=cpu_jiffies)
    cpu_s: dict[str, float] = field(default_factory=dict)
    sequences: dict[str, int] = field(default_factory=dict)
    ended_s: float = math.nan

    def __post_init__(self) -> None:
        self.cpu_s = {name: process_cpu_s(pid) for name, pid in self.pids.items()}
        self.sequences = {name: camera.latest().sequence for name, camera in self.cameras.items()}

    def _delivered(self, camera: Any, name: str) -> float:
        """Frames `camera` delivered since start; NaN if it went stale (starved of CPU) meanwhile."""
        try:
            return camera.frames()[-1].sequence - self.sequences[name]
        except CameraError:
            return math.nan

    def finish(self) -> dict[str, Any]:
        self.ended_s = time.monotonic()
        elapsed_s = self.ended_s - self.started_s
        jiffies = [b - a for a, b in zip(self.jiffies, cpu_jiffies(), strict=True)]
        total = max(1, sum(jiffies[:8]))  # user nice system idle iowait irq softirq steal
        cores = {name: (process_cpu_s(pid) - self.cpu_s[name]) / elapsed_s for name, pid in self.pids.items()}
        fps = {name: self._delivered(c, name) / elapsed_s for name, c in self.cameras.items()}
        busy = 1 - (jiffies[3] + jiffies[4]) / total
        ours = sum(v for v in cores.values() if not math.isnan(v))
        return {
            "started_s": self.started_s,
            "ended_s": self.ended_s,
            "seconds": elapsed_s,
            "loadavg_before": self.loadavg_before,
            "loadavg_after": os.getloadavg(),
            "machine_busy_pct": 100 * busy,
            # CPU used by everything else on the machine (other users, kernel workers), cores
            "other_cores": busy * (os.cpu_count() or 1) - ours,
            "steal_pct": 100 * jiffies[7] / total,
            "cpu_cores": cores,
            "camera_slots_per_s": fps,
        }


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


# --- output -----------------------------------------------------------------------------


def pacing_table(results: list[dict[str, Any]]) -> str:
    head = "| condition | loop step | pacing | periods | achieved Hz | rate error %"
    head += " | abs(period − 33.33 ms) p50 / p99 / max ms | > 1.1× % | > 1.5× | < 0.9× | target: rate / p99 | met |"
    lines = [head, "|" + "---|" * 12]
    for r in results:
        target_p99 = TARGETS["p99_ms"][r["condition"]]
        for group, by_pacing in r["pacing"].items():
            for pacing, label in ((OURS, "ours (LoopTimer)"), (LEROBOT, "LeRobot (relative)")):
                s = by_pacing[pacing]
                met = abs(s["rate_error_pct"]) <= TARGETS["rate_error_pct"] and s["abs_dev_p99_ms"] <= target_p99
                cells = [
                    r["condition"],
                    group,
                    label,
                    s["periods"],
                    f"{s['achieved_hz']:.3f}",
                    f"{s['rate_error_pct']:+.3f}",
                    f"{s['abs_dev_p50_ms']:.3f} / {s['abs_dev_p99_ms']:.2f} / {s['abs_dev_max_ms']:.2f}",
                    f"{s['over_1.1x_pct']:.1f}",
                    s["over_1.5x"],
                    s["under_0.9x"],
                    f"≤ {TARGETS['rate_error_pct']} % / ≤ {target_p99} ms",
                    "yes" if met else "no",
                ]
                lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def bus_table(results: list[dict[str, Any]]) -> str:
    head = "| condition | step | ticks | fails | median ms | p90 ms | p99 ms | max ms | mean ms"
    head += " | LeRobot ÷ ours (median / p99) |"
    lines = [head, "|" + "---|" * 10]
    for r in results:
        ours, stock = r["step"][OURS], r["step"][LEROBOT]
        for impl, label in ((OURS, "ours: observe + act"), (LEROBOT, "LeRobot: get_action + send + get_obs")):
            s = r["step"][impl]
            ratio = f"{stock['p50_ms'] / ours['p50_ms']:.2f} / {stock['p99_ms'] / ours['p99_ms']:.2f}"
            cells = [r["condition"], label, s["ticks"], s["failures"]]
            cells += [f"{s[k]:.2f}" for k in ("p50_ms", "p90_ms", "p99_ms", "max_ms", "mean_ms")]
            cells.append(ratio if impl == OURS else "")
            lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def machine_table(results: list[dict[str, Any]]) -> str:
    head = "| condition | loadavg before → after | busy % | steal % | CPU cores: this process / emulator / encoder"
    head += " | other processes, cores | camera frames/s | encoder fps, threads by class |"
    lines = [head, "|" + "---|" * 8]
    for r in results:
        m = r["machine"]
        before, after = (" ".join(f"{v:.2f}" for v in m[k]) for k in ("loadavg_before", "loadavg_after"))
        cores = " / ".join(f"{m['cpu_cores'].get(k, math.nan):.2f}" for k in ("this_process", "emulator", "encoder"))
        cams = ", ".join(f"{v:.1f}" for v in m["camera_slots_per_s"].values()) or "-"
        encoder = "-"
        if "encoder" in r:
            classes = ", ".join(f"{n} {c}" for n, c in r["encoder_thread_classes"].items())
            encoder = f"{r['encoder'].get('fps_while_measuring', math.nan):.2f}, {classes}"
        cells = [r["condition"], f"{before} → {after}", f"{m['machine_busy_pct']:.0f}", f"{m['steal_pct']:.2f}"]
        cells += [cores.replace("nan", "-"), f"{m['other_cores']:.2f}", cams, encoder]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def notes(results: list[dict[str, Any]]) -> str:
    lines = []
    for r in results:
        ours = r["step"][OURS]
        timer = "; ".join(
            f"{group}: {p['loop_timer_overruns']} overruns, {p['loop_timer_skipped']} skipped deadlines,"
            f" steady rate error {p['steady_rate_error_pct']:+.4f} %"
            for group, p in ((g, by_pacing[OURS]) for g, by_pacing in r["pacing"].items())
        )
        lines.append(
            f"- {r['condition']}: our observe() reads all four arms in median {ours['read_p50_ms']:.2f} ms,"
            f" p99 {ours['read_p99_ms']:.2f} ms. LoopTimer with {timer}."
            f" Late reply bytes flushed between blocks: {r['stale_bytes_flushed_between_blocks']}."
        )
        for impl in (OURS, LEROBOT):
            errors = r["step"][impl]["errors"]
            if errors:
                lines.append(f"  - {impl} failures ({r['step'][impl]['failures']}), first: {errors[0][:240]}")
        if "error" in r.get("encoder", {}):
            lines.append(f"  - encoder: {r['encoder']['error']}")
    lines.append(
        "- steady rate error: LoopTimer's rate from each block's second tick to its last; the table's rate also"
        " charges one wake-up delay per block (the first tick of a block is due at once, its end is as late as"
        " any wake-up), an artifact of alternating blocks."
    )
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=72.0, help="measured seconds per condition (default 72)")
    parser.add_argument("--block-s", type=float, default=4.0, help="seconds per alternating block (default 4)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 6 s per condition in 1-s blocks")
    parser.add_argument("--out", type=Path, default=Path("outputs/bench/rig_loop.json"), help="JSON results file")
    parser.add_argument(
        "--wait-quiet", type=float, default=0.0, help="first wait up to this many s for a 1-min load average < 0.6"
    )
    parser.add_argument("--encode-load", type=Path, help=argparse.SUPPRESS)  # the encoder child
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.block_s = 6.0, 1.0
    if args.seconds <= 0 or args.block_s * FPS < 3:
        parser.error("--seconds must be > 0 and --block-s at least 3 periods")
    return args


def main(argv: list[str] | None = None) -> None:
    """Run the three conditions, print the tables, write the JSON."""
    args = parse_args(argv)
    if args.encode_load is not None:
        encode_load(args.encode_load)
        return
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
