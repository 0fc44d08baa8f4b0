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
    child "ours", a fresh process: so101-deploy's load_predictor -> make_engine(EngineConfig(kind=
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
SOFollower reads OpenCV cameras; a plugin camera config registered here), ours through the rig's
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
import contextlib
import json
import math
import os
import platform
import resource
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
from lerobot.cameras import Camera as LeRobotCamera
from lerobot.cameras import CameraConfig as LeRobotCameraConfig

from benchmarks.proc_stats import SCHED_NAMES
from benchmarks.rig_loop import CAMERAS, RIG_ID
from benchmarks.summary import Row
from robot.cameras.camera import Camera
from robot.cameras.config import VirtualCameraConfig
from robot.config import BusConfig, CalibrationConfig, RigConfig
from robot.safety.config import ExitMode, SafetyConfig
from robot.virtual.bus import TimingMode
from robot.virtual.rig_model import VirtualRigConfig

FPS = 30
PERIOD_S = 1.0 / FPS
STALL_FACTOR = 1.5  # a period longer than this many budgets is a stall (LeRobot's starved tick)
TASK = "Fold the cloth"
SCRIPTED_CHUNK, SCRIPTED_LATENCY_S = 50, 0.5
FULL = {"seconds": 30.0, "unprimed_s": 15.0, "scripted_s": 10.0}
QUICK = {"seconds": 6.0, "unprimed_s": 0.0, "scripted_s": 3.0}
UNPRIMED = "ours, as so101-deploy starts it"  # the engine's worker starts inside the loop (see run_rig_loop)
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


@dataclass
class FollowerPose:
    """The followers' last read joints, for LeRobot's side's virtual cameras to render."""

    positions: dict[str, float] = field(default_factory=dict)

    def get(self) -> dict[str, float]:
        return self.positions


@LeRobotCameraConfig.register_subclass("so101_virtual")
@dataclass(kw_only=True)
class VirtualRigCameraConfig(LeRobotCameraConfig):
    """LeRobot camera config for one of our virtual cameras (only built in code, never parsed)."""

    camera: Any = None  # our robot.cameras Camera, not yet connected


# LeRobot finds a plugin camera's class from its config's module (`make_device_from_device_class`:
# "<pkg>.config_<x>" -> "<pkg>"); this file runs both as __main__ (the children) and imported.
VirtualRigCameraConfig.__module__ = f"{__name__}.config_virtual_rig_camera"


class VirtualRigCamera(LeRobotCamera):
    """LeRobot's camera interface over one of our virtual cameras (its capture thread renders)."""

    def __init__(self, config: VirtualRigCameraConfig) -> None:
        super().__init__(config)
        self.camera: Camera = config.camera

    @property
    def is_connected(self) -> bool:
        return self.camera.is_connected

    @staticmethod
    def find_cameras() -> list[dict[str, Any]]:
        return []

    def connect(self, warmup: bool = True) -> None:
        self.camera.connect()

    def read(self) -> np.ndarray:
        return self.async_read()

    def async_read(self, timeout_ms: float = 200) -> np.ndarray:
        if not self.camera.wait_for_frame_after(time.monotonic(), timeout_ms / 1000):
            raise TimeoutError(f"virtual camera {self.camera.name}: no new frame within {timeout_ms} ms")
        return self.camera.latest().image

    def read_latest(self, max_age_ms: int = 500) -> np.ndarray:
        return self.camera.latest().image

    def disconnect(self) -> None:
        self.camera.disconnect()


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
    """Statistics over the ticks from the first one that sent a policy action (see the docstring)."""
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
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# --- LeRobot's side ---------------------------------------------------------------------


def run_lerobot(checkpoint: Path, root: Path, seconds: float, height: int, width: int) -> dict[str, Any]:
    """lerobot-rollout's base strategy with sync inference on the virtual rig, timed from outside its loop."""
    from threading import Event

    from lerobot.configs import PreTrainedConfig
    from lerobot.robots.bi_so_follower import BiSOFollowerConfig
    from lerobot.robots.so_follower import SOFollowerConfig
    from lerobot.rollout import RolloutConfig, build_rollout_context, create_strategy
    from lerobot.rollout.configs import BaseStrategyConfig
    from lerobot.rollout.inference import SyncInferenceConfig
    from lerobot.rollout.robot_wrapper import ThreadSafeRobot

    from robot.cameras.factory import make_cameras
    from robot.cameras.virtual.joint_sources import ready_pose

    config = rig_config(root, height, width)
    ports = follower_ports(config)
    pose = FollowerPose(ready_pose())  # until the first observation
    ours = make_cameras(config.cameras, joint_source=pose.get)  # one scene, one epoch, as in our rig
    lerobot_cameras = {
        name: VirtualRigCameraConfig(camera=camera, width=width, height=height, fps=FPS)
        for name, camera in ours.items()
    }
    robot = BiSOFollowerConfig(
        id=RIG_ID,
        calibration_dir=root / "robots" / "so_follower",
        left_arm_config=SOFollowerConfig(port=ports["left_follower"], cameras={"wrist": lerobot_cameras["left_wrist"]}),
        right_arm_config=SOFollowerConfig(
            port=ports["right_follower"], cameras={"wrist": lerobot_cameras["right_wrist"]}
        ),
        cameras={"overhead": lerobot_cameras["overhead"]},
    )
    policy = PreTrainedConfig.from_pretrained(checkpoint)
    policy.pretrained_path = str(checkpoint)  # what RolloutConfig sets from --policy.path
    cfg = RolloutConfig(
        robot=robot,
        policy=policy,
        strategy=BaseStrategyConfig(),
        inference=SyncInferenceConfig(),
        fps=FPS,
        duration=seconds + MAX_WARMUP_S,  # a backstop: the shutdown event ends the run `seconds` after the first action
        device="cpu",
        task=TASK,
        return_to_initial_position=False,
    )
    trace = Trace(inline_chunks=True)

    class TimedRobot(ThreadSafeRobot):
        def get_observation(self) -> dict[str, Any]:
            trace.start_s.append(time.perf_counter())
            observation = super().get_observation()
            trace.observe_s.append(time.perf_counter() - trace.start_s[-1])
            pose.positions = {k: float(v) for k, v in observation.items() if k.endswith(".pos")}
            return observation

        def send_action(self, action: Any) -> Any:
            sent = super().send_action(action)
            trace.work_end_s.append(time.perf_counter())
            if len(trace.work_end_s) == 1:  # the first action: the measured window starts
                stop_after(seconds, shutdown.set)
            trace.starved.append(False)
            trace.acted.append(True)
            return sent

    shutdown = Event()  # what lerobot-rollout's signal handler sets on Ctrl-C
    ctx = build_rollout_context(cfg, shutdown)
    ctx.hardware.robot_wrapper = TimedRobot(ctx.hardware.robot_wrapper.inner)
    model = ctx.policy.policy
    predict_action_chunk = model.predict_action_chunk

    def timed_chunk(*args: Any, **kwargs: Any) -> Any:
        begin = time.perf_counter()
        actions = predict_action_chunk(*args, **kwargs)
        trace.chunks.append((begin, time.perf_counter() - begin))
        return actions

    model.predict_action_chunk = timed_chunk  # as build_rollout_context does for torch.compile
    strategy = create_strategy(cfg.strategy)
    before = cpu_s()
    try:
        strategy.setup(ctx)
        strategy.run(ctx)
        facts = process_facts(before)  # while its threads still run
    finally:
        strategy.teardown(ctx)  # stops the engine, disconnects the robot and its cameras
    return {
        "side": "LeRobot sync (lerobot-rollout)",
        **tick_stats(trace),
        **facts,
        "chunk_size": model.config.chunk_size,
    }


# --- our side ---------------------------------------------------------------------------


class TickRecorder:
    """A step hook: when each tick started and its work ended, and whether the source starved."""

    def __init__(self, source: Any, trace: Trace, seconds: float) -> None:
        self.source = source
        self.trace = trace
        self.seconds = seconds
        self.stop: Any = None  # the loop's stop(), called `seconds` after the first action
        self._seen: set[int] = set()  # chunk ids already recorded

    def on_step(self, step: Any) -> None:
        self.trace.work_end_s.append(time.monotonic())
        self.trace.start_s.append(step.tick.start_s)
        self.trace.observe_s.append(step.observation.bus_time_s)
        facts = self.source.last_facts
        starved = facts is not None and facts.starved
        self.trace.starved.append(bool(starved and self.source.has_acted))  # before the first action: warm-up
        acted = facts is not None and not facts.starved
        if acted and True not in self.trace.acted:
            stop_after(self.seconds, self.stop)
        self.trace.acted.append(acted)
        if facts is not None and not facts.starved and facts.chunk_id not in self._seen:
            self._seen.add(facts.chunk_id)  # the chunk's first tick: when it was computed (sync) or arrived (async)
            self.trace.chunks.append((step.tick.start_s, facts.chunk_latency_s))


def run_rig_loop(
    config: RigConfig, ports: dict[str, str], engine: Any, seconds: float, *, prime: bool = True
) -> tuple[Trace, Any, dict[str, Any]]:
    """Our ControlLoop on a BimanualRig with `engine` behind a PolicySource: the trace, loop stats, process facts.

    `prime`: the first chunk is computed before the loop (`PolicySource.prime`, what EngineConfig.prime
    asks for), which also starts the engine's worker thread here, at normal priority. Without it the
    worker starts inside the loop, as so101-deploy runs it, and inherits the loop's SCHED_FIFO.
    """
    from policies.engines.sync import SyncEngine
    from policies.source import PolicySource
    from robot.control_loop import ControlLoop
    from robot.rig import BimanualRig

    before = cpu_s()
    trace = Trace(inline_chunks=isinstance(engine, SyncEngine))
    source = PolicySource(engine, task=TASK)
    recorder = TickRecorder(source, trace, seconds)
    with BimanualRig(config, ports) as rig:
        loop = ControlLoop(rig, source, fps=FPS, hooks=[recorder], realtime_priority=config.realtime_priority)
        recorder.stop = loop.stop
        try:
            if prime:
                source.prime(rig.observe())
            stats = loop.run(duration_s=seconds + MAX_WARMUP_S)
            facts = process_facts(before)  # while the engine's worker and the cameras still run
        finally:
            source.close()
    return trace, stats, facts


def run_ours(
    checkpoint: Path, root: Path, seconds: float, height: int, width: int, *, unprimed_s: float = 0.0
) -> list[dict[str, Any]]:
    """so101-deploy's loading and engine on our rig (async engine, PolicySource, ControlLoop), primed.

    With `--unprimed-s` > 0, then again for that long as so101-deploy starts it (not primed; see run_rig_loop).
    """
    from rich.console import Console

    from policies.commands.deploy import DeployConfig, PolicyOptions, load_predictor
    from policies.engines.config import EngineConfig, EngineKind
    from policies.engines.factory import make_engine

    config = rig_config(root, height, width)
    ports = follower_ports(config)
    deploy = DeployConfig(
        rig=config,
        policy=PolicyOptions(path=str(checkpoint), device="cpu"),
        engine=EngineConfig(kind=EngineKind.ASYNC),
        fps=FPS,
        record=False,
    )
    predictor = load_predictor(deploy, Console(stderr=True))
    results = []
    for side, prime, window_s in (("ours", True, seconds), (UNPRIMED, False, unprimed_s)):
        if window_s <= 0:
            continue
        log = RequestLog(predictor)
        engine = make_engine(deploy.engine, log, fps=FPS).engine
        log.queue = engine.queue
        trace, loop_stats, facts = run_rig_loop(config, ports, engine, window_s, prime=prime)
        results.append({
            "side": "ours, async" if side == "ours" else side,
            **tick_stats(trace),
            **facts,
            "chunk_size": predictor.chunk_size,
            "engine": engine_facts(engine),
            "loop_timer": loop_stats.__dict__,
        })  # fmt: skip
        results[-1]["target"] = target_check(trace, log)
    return results


def engine_facts(engine: Any) -> dict[str, Any]:
    """The engine's counters, its refill threshold (background engines) and warm-up ticks."""
    threshold = engine.refill_threshold() if hasattr(engine, "refill_threshold") else None
    return {
        **engine.stats().__dict__,
        "refill_threshold": threshold,
        "warmup_ticks": getattr(engine, "warmup_ticks", None),
    }


class RequestLog:
    """A ChunkPredictor wrapper: each call's start, the actions still queued then, and its latency."""

    def __init__(self, predictor: Any) -> None:
        self.predictor = predictor
        self.queue: Any = None  # the engine's ChunkQueue, set once the engine exists
        self.calls: list[tuple[float, int, float]] = []  # (start, queued actions, latency s)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.predictor, name)  # chunk_size, n_action_steps, rtc_enabled, ...

    def predict_chunk(self, inputs: Any, **options: Any) -> Any:
        begin, depth = time.monotonic(), len(self.queue) if self.queue is not None else 0
        chunk = self.predictor.predict_chunk(inputs, **options)
        self.calls.append((begin, depth, time.monotonic() - begin))
        return chunk

    def reset(self) -> None:
        self.predictor.reset()


def target_check(trace: Trace, log: RequestLog) -> dict[str, Any]:
    """The issue's target for a background engine: no starved tick while a chunk's latency is below the
    execution time left when it was asked for (the actions queued at its call / fps)."""
    first = trace.acted.index(True) + 1 if True in trace.acted else len(trace.acted)
    window_s = trace.start_s[first] if first < len(trace.start_s) else math.inf
    calls = [(begin, depth / FPS, latency) for begin, depth, latency in log.calls if begin >= window_s]
    forbidden = 0  # starved ticks while a chunk whose latency was below the time left was in flight
    for start, starved in zip(trace.start_s[first:], trace.starved[first:], strict=False):
        if starved:
            flight = [(left, latency) for begin, left, latency in log.calls if begin <= start < begin + latency]
            forbidden += any(latency < left for left, latency in flight)
    hidden = [latency < left for _, left, latency in calls]
    return {
        "chunks": len(calls),
        "chunks_with_latency_below_time_left": sum(hidden),
        "time_left_at_request_min_s": min((left for _, left, _ in calls), default=None),
        "chunk_latency_max_s": max((latency for _, _, latency in calls), default=None),
        "starved_ticks": int(sum(trace.starved[first:])),
        "starved_ticks_the_target_forbids": forbidden,
        "met": forbidden == 0,
        "calls": [{"start_s": b - window_s, "time_left_s": left, "latency_s": lat} for b, left, lat in calls],
    }


def run_scripted(root: Path, seconds: float, height: int, width: int) -> list[dict[str, Any]]:
    """The scripted predictor (0.5 s, chunk 50) on our rig: our SyncEngine, then our AsyncEngine, both primed."""
    from policies.engines.async_engine import AsyncEngine
    from policies.engines.sync import SyncEngine
    from policies.testing.scripted_predictor import ScriptedPredictor, wave

    config = rig_config(root, height, width)
    ports = follower_ports(config)
    results = []
    for name, make in (("sync", SyncEngine), ("async", AsyncEngine)):
        log = RequestLog(ScriptedPredictor(SCRIPTED_CHUNK, latency_s=SCRIPTED_LATENCY_S, pattern=wave(3.0, fps=FPS)))
        engine = make(log) if make is SyncEngine else make(log, fps=FPS)
        log.queue = engine.queue
        trace, _, _ = run_rig_loop(config, ports, engine, seconds)
        result = {"side": f"scripted, our {name} engine", **tick_stats(trace), "engine": engine_facts(engine)}
        if make is AsyncEngine:
            result["target"] = target_check(trace, log)
        results.append(result)
    return results


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
        Row("deploy_loop", f"deploy: starved ticks per 1000, {label}", "", per_1000(ours, starved(ours)),
            per_1000(lerobot, starved(lerobot)), target="0 while chunk latency < the chunk's remaining execution time"),
        Row("deploy_loop", f"deploy: deadlines without a fresh action per 1000, {label}", "", deadlines(ours),
            deadlines(lerobot), target="0"),
        Row("deploy_loop", f"deploy: loop period |dev| p99, {label}", "ms", ours["period_abs_dev_p99_ms"],
            lerobot["period_abs_dev_p99_ms"], target="≤ 2 ms"),
        Row("deploy_loop", f"deploy: loop period |dev| max, {label}", "ms", ours["period_abs_dev_max_ms"],
            lerobot["period_abs_dev_max_ms"]),
        Row("deploy_loop", f"deploy: achieved loop rate, {label}", "Hz", ours["achieved_hz"], lerobot["achieved_hz"],
            higher_is_better=True, target="30 Hz"),
        Row("deploy_loop", f"deploy: loop idle (sleeping) share, {label}", "%", 100 * ours["idle_fraction"],
            100 * lerobot["idle_fraction"], higher_is_better=True),
        Row("deploy_loop", f"deploy: ACT chunk latency p50 in the loop, {label}", "s", ours["chunk_latency_p50_s"],
            lerobot["chunk_latency_p50_s"]),
        Row("deploy_loop", f"deploy: peak RSS of the process, {label}", "MB", ours["peak_rss_mb"],
            lerobot["peak_rss_mb"], target="≤ LeRobot's"),
    ]  # fmt: skip
    sync, background = (
        next((r for r in scripted if r["inference"] == kind), None) for kind in ("inline", "background")
    )
    if sync and background:
        left_s = background["target"]["time_left_at_request_min_s"]
        rows.append(
            Row("deploy_loop", "deploy: deadlines without a fresh action per 1000, scripted 0.5 s chunk of 50", "",
                deadlines(background), deadlines(sync), anchor_name="our sync engine (LeRobot's blocking pattern)",
                target=f"0 (latency {SCRIPTED_LATENCY_S} s < the {left_s:.2f} s left)")
        )  # fmt: skip
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
            print(f"built a full-size ACT ({params / 1e6:.1f}M params) in {time.monotonic() - started:.0f} s",
                  file=sys.stderr)  # fmt: skip
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
            print(f"{result['side']}: {t['chunks_with_latency_below_time_left']} of {t['chunks']} chunks asked for "
                  f"took less than the execution time left then (min {t['time_left_at_request_min_s']:.2f} s; "
                  f"latency max {t['chunk_latency_max_s']:.2f} s); {t['starved_ticks']} starved ticks, "
                  f"{t['starved_ticks_the_target_forbids']} while such a chunk was computed: "
                  f"target {'met' if t['met'] else 'NOT met'}")  # fmt: skip
    print(f"LeRobot logged {lerobot[0]['slow_loop_warnings_logged']} 'running slower' warnings")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    summary = [asdict(row) for row in rows]  # Row's keys; summary.py computes the ratio
    args.out.write_text(json.dumps({"meta": meta, "results": ordered, "summary": summary}, indent=1))
    print(f"\nwrote {args.out} ({elapsed_s:.0f} s)")


if __name__ == "__main__":
    main()
