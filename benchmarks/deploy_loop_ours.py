"""Deploy loop, our side: so101-deploy's engine and ControlLoop on the virtual rig, and the scripted engines.

`run_ours` (a child process, `--child ours ...`) loads the checkpoint as so101-deploy does and runs our
async engine primed, then optionally unprimed; `run_scripted` (in the parent) runs a scripted
0.5 s predictor through our SyncEngine and AsyncEngine. `TickRecorder` stamps each tick from a step
hook, `RequestLog` times each chunk request, `target_check` scores the issue's target.
"""

import math
import time
from pathlib import Path
from typing import Any

from benchmarks.deploy_loop_trace import (
    FPS,
    MAX_WARMUP_S,
    SCRIPTED_CHUNK,
    SCRIPTED_LATENCY_S,
    TASK,
    Trace,
    cpu_s,
    follower_ports,
    process_facts,
    rig_config,
    stop_after,
    tick_stats,
)
from robot.config import RigConfig

UNPRIMED = "ours, as so101-deploy starts it"  # the engine's worker starts inside the loop (see run_rig_loop)


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
        loop = ControlLoop(rig, source, hooks=[recorder], realtime_priority=config.realtime_priority)
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
    checkpoint: Path,
    root: Path,
    seconds: float,
    height: int,
    width: int,
    *,
    unprimed_s: float = 0.0,
    policy: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """so101-deploy's loading and engine on our rig (async engine, PolicySource, ControlLoop), primed.

    With `--unprimed-s` > 0, then again for that long as so101-deploy starts it (not primed; see run_rig_loop).
    `policy`: further PolicyOptions fields (e.g. runtime, precision), as --policy.* would set them.
    """
    from rich.console import Console

    from policies.commands.deploy import DeployConfig, check_checkpoint, load_predictor
    from policies.engines.config import EngineConfig, EngineKind
    from policies.engines.factory import make_engine
    from policies.runner import PolicyOptions

    config = rig_config(root, height, width)
    ports = follower_ports(config)
    deploy = DeployConfig(
        rig=config,
        policy=PolicyOptions(path=str(checkpoint), device="cpu", **(policy or {})),
        engine=EngineConfig(kind=EngineKind.ASYNC),
        fps=FPS,
        record=False,
    )
    console = Console(stderr=True)
    predictor = load_predictor(deploy, check_checkpoint(deploy, console), console)
    results = []
    for side, prime, window_s in (("ours", True, seconds), (UNPRIMED, False, unprimed_s)):
        if window_s <= 0:
            continue
        log = RequestLog(predictor)
        engine = make_engine(deploy.engine, log, fps=FPS).engine
        log.queue = engine.queue
        trace, loop_stats, facts = run_rig_loop(config, ports, engine, window_s, prime=prime)
        results.append(
            {
                "side": "ours, async" if side == "ours" else side,
                **tick_stats(trace),
                **facts,
                "chunk_size": predictor.chunk_size,
                "engine": engine_facts(engine),
                "loop_timer": loop_stats.__dict__,
            }
        )
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
