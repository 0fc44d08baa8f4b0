"""Recording 3 x 480x640 cameras at 30 Hz on the virtual rig: our recorder against LeRobot's, in one run.

    for codec in (h264, libsvtav1):
        for impl in (ours, lerobot):            each in a fresh child process (this file with --run)
            ours:    DatasetWriter (writer process, shared-memory ring, durable saves), fed by our
                     BimanualRig: observe() (12 joints, 3 frames picked by timestamp), act(leader action)
            lerobot: LeRobotDataset.create(streaming_encoding=True) in the loop's own process,
                     add_frame() in the loop, save_episode() between episodes (what lerobot-record does),
                     fed by LeRobot's BiSOLeader/BiSOFollower and the cameras' latest frames
            both: the same emulated arms (wire timing, the leaders playing `cloth_fold`) and the same
                  three virtual cameras (rendered from the arms, in capture threads); see record_rig.py
            N episodes of S seconds: a LoopTimer loop at 30 Hz steps the rig and hands the frame to the
            writer each tick; then save (timed)
        report per run: loop period deviation |period - 33.3 ms| p50/p99/max, add_frame cost,
        frames dropped per 1,000 (ring full, encoder queue drops, frames missing from the videos),
        pause between episodes (how long the loop could not tick: LeRobot's save_episode blocks it,
        ours saves on another thread while the loop keeps teleoperating: the reset) and save time
        p50/p95/max, CPU seconds per recorded second (loop and writer), peak RSS of each, and the
        peak summed PSS of the recorder's process tree (the emulator's processes left out), with its
        anonymous / file / shared-memory parts, each episode's own peak (does memory grow over a
        session?) and the whole timeline (`--plot` draws it)

`--no-rig` takes the rig out: pre-rendered frames (moving gradients and a moving block, 2 s cycle)
and a still state, which isolates what the writer alone costs the loop. A measurement, not a test:
nothing is asserted. Runs as whatever user starts it: as root, LeRobot's in-process SVT-AV1 threads
(and the thread that opens each encoder) become SCHED_FIFO 99, which is part of what is measured.

    .venv/bin/python -m benchmarks.record_writer                 # 2 codecs x 2 impls x 4 x 10 s, ~4 min
    .venv/bin/python -m benchmarks.record_writer --repeats 3     # each pair 3 times, medians (~12 min)
    .venv/bin/python -m benchmarks.record_writer --quick         # 2 episodes of 3 s, smoke run
    .venv/bin/python -m benchmarks.record_writer --no-rig --episodes 3 --seconds 8
    .venv/bin/python -m benchmarks.record_writer --codecs h264 --episodes 25 --seconds 20 \
        --plot outputs/bench/record_memory.png                 # a session's worth: does memory grow?
"""

import argparse
import contextlib
import gc
import itertools
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from benchmarks.memory_sampler import MemorySampler, peaks_within, sampler_check
from benchmarks.proc_stats import process_cpu_s
from benchmarks.record_rig import REALTIME_PRIORITY, Step, rig_step
from robot.loop_timer import LoopTimer
from robot.realtime import realtime_thread

CAMERAS = (("left_wrist", 480, 640), ("right_wrist", 480, 640), ("overhead", 480, 640))
FPS = 30
TASK = "Fold the cloth"


def frames(cycle: int = 60) -> list[dict[str, np.ndarray]]:
    """A 2 s cycle of distinct frames per camera (rendered once, outside the loop)."""
    rng = np.random.default_rng(0)
    noise = rng.integers(-12, 12, (480, 640, 3), dtype=np.int16)
    ys, xs = np.mgrid[0:480, 0:640]
    out = []
    for index in range(cycle):
        images = {}
        for number, (name, height, width) in enumerate(CAMERAS):
            base = np.stack([(xs + 7 * index + 50 * number) % 256, (ys + 3 * index) % 256, (xs + ys) % 256], axis=-1)
            image = np.clip(base + noise, 0, 255).astype(np.uint8)
            top, left = (11 * index) % (height - 80), (17 * index + 90 * number) % (width - 80)
            image[top : top + 80, left : left + 80] = 255 - image[top : top + 80, left : left + 80]
            images[name] = image
        out.append(images)
    return out


def peak_rss_mb(pid: int) -> float:
    """VmHWM of a live process, MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Ours:
    """Our writer process behind the loop."""

    def __init__(self, root: Path, vcodec: str) -> None:
        from teleop.dataset.spec import WriterSpec
        from teleop.dataset.writer_process import DatasetWriter

        self.writer = DatasetWriter(WriterSpec(root=root, repo_id="bench/rec", fps=FPS, cameras=CAMERAS, vcodec=vcodec))
        self.writer.open()

    def begin(self) -> None:
        self.writer.begin_episode(TASK)

    def add(self, state: np.ndarray, action: np.ndarray, images: dict, tick_s: float) -> bool:
        return self.writer.add_frame(state, action, images, {"tick_s": tick_s})

    def save(self) -> dict:
        saved = self.writer.save_episode({})
        return {"ring_dropped": saved.dropped_frames, "video_missing": saved.encoder_dropped_frames}

    def writer_pid(self) -> int | None:
        return self.writer.pid

    def close(self) -> None:
        self.writer.close()


class LeRobots:
    """LeRobot's own recording path: streaming encoding inside the loop's process."""

    def __init__(self, root: Path, vcodec: str) -> None:
        from lerobot.configs import RGBEncoderConfig
        from lerobot.datasets.lerobot_dataset import LeRobotDataset

        from teleop.dataset.features import dataset_features

        self.dataset = LeRobotDataset.create(
            "bench/rec",
            FPS,
            dataset_features(CAMERAS),
            root=root,
            robot_type="bi_so_follower",
            rgb_encoder=RGBEncoderConfig(vcodec=vcodec),
            streaming_encoding=True,
            video_backend="pyav",
        )
        self.length = 0

    def begin(self) -> None:
        self.length = 0

    def add(self, state: np.ndarray, action: np.ndarray, images: dict, tick_s: float) -> bool:
        frame = {"observation.state": state, "action": action, "task": TASK}
        frame.update({f"observation.images.{name}": image for name, image in images.items()})
        self.dataset.add_frame(frame)
        self.length += 1
        return True

    def save(self) -> dict:
        encoder = self.dataset.writer._streaming_encoder  # its silent-drop counter (0.1 s put timeout)
        dropped = sum(encoder._dropped_frames.values())
        self.dataset.save_episode()
        return {"queue_dropped": dropped}

    def writer_pid(self) -> int | None:
        return None

    def close(self) -> None:
        self.dataset.finalize()


@contextlib.contextmanager
def clip_step() -> Iterator[tuple[Step, list[int]]]:
    """No rig: pre-rendered frames and a still state, so only the writer costs the loop anything."""
    clip, state, ticks = frames(), np.zeros(12, np.float32), itertools.count()
    yield (lambda: (state, state, clip[next(ticks) % len(clip)])), []


def run(impl: str, vcodec: str, episodes: int, seconds: float, rig: bool = True) -> dict:
    """One (impl, codec) run in this process; returns its measurements.

    Both loop processes first import what their recording command has loaded (our rig, with LeRobot's
    SO-101 classes and torch; lerobot-record's whole script), so that memory compares like with like.
    Between episodes each side does what its recorder does: LeRobot's loop stops while
    `save_episode()` runs; ours keeps ticking (the reset period: arms still teleoperated) while the
    writer process makes the episode durable.
    The pause is how long the loop could not tick; the save time is until the episode is saved.
    """
    if impl == "ours":
        import robot.rig  # noqa: F401 - what so101-record's process has loaded
    else:
        import lerobot.scripts.lerobot_record  # noqa: F401 - what lerobot-record's process has loaded

    with tempfile.TemporaryDirectory(prefix="bench-rec-") as tmp, contextlib.ExitStack() as stack:
        started = time.monotonic()
        # Before any thread of ours starts, as so101-record opens it (the writer may then fork).
        recorder = Ours(Path(tmp) / "ds", vcodec) if impl == "ours" else LeRobots(Path(tmp) / "ds", vcodec)
        open_s = time.monotonic() - started
        step, not_ours = stack.enter_context(rig_step(impl, Path(tmp), CAMERAS, FPS) if rig else clip_step())
        writer_pid = recorder.writer_pid()
        pids = [os.getpid(), *([writer_pid] if writer_pid else [])]
        memory = MemorySampler(exclude=not_ours)
        memory.start()
        cpu_before = sum(process_cpu_s(pid) for pid in pids)
        deviations, add_ms, pauses, saves, drops, taken = [], [], [], [], [], 0
        spans: list[tuple[float, float]] = []  # each episode from begin() to the end of its save, monotonic s
        timer = LoopTimer(FPS)
        for _ in range(episodes):
            begun_s = time.monotonic()
            recorder.begin()
            # Ours runs as `ControlLoop.run` runs the control thread: real-time when permitted.
            with realtime_thread(REALTIME_PRIORITY if impl == "ours" else 0):
                timer.start()
                starts = []
                for _ in range(round(seconds * FPS)):
                    tick = timer.wait()
                    starts.append(tick.start_s)
                    before = time.perf_counter()
                    state, action, images = step()
                    taken += recorder.add(state, action, images, tick.start_s)
                    add_ms.append((time.perf_counter() - before) * 1000)
                deviations += list(np.abs(np.diff(starts) - 1 / FPS) * 1000)
                before = time.monotonic()
                if impl == "ours":
                    pause_s, result = save_while_ticking(recorder, timer, step if rig else None)
                else:
                    result = recorder.save()
                    pause_s = time.monotonic() - before
            saves.append(time.monotonic() - before)
            spans.append((begun_s, time.monotonic()))
            pauses.append(pause_s)
            drops.append(result)
        cpu_after = sum(process_cpu_s(pid) for pid in pids)
        writer_rss = peak_rss_mb(writer_pid) if writer_pid else None
        memory.stop()
        collection_copied_mb = collection_copies_mb()  # with the writer still open
        recorder.close()
        stack.close()  # the rig, if any, inside the temporary directory
    frames_recorded = episodes * round(seconds * FPS)
    origin_s = spans[0][0] if spans else 0.0  # the plots' zero: when the first episode began
    dropped = sum(sum(d.values()) for d in drops)
    return {
        "impl": impl,
        "vcodec": vcodec,
        "rig": rig,
        "episodes": episodes,
        "seconds": seconds,
        "open_s": open_s,
        "period_dev_ms": summary(deviations, 50, 99),
        "add_frame_ms": summary(add_ms, 50, 99),
        "pause_s": summary(pauses, 50, 95),
        "pauses_s": pauses,
        "save_s": summary(saves, 50, 95),
        "drops": drops,
        "dropped_per_1000": 1000 * dropped / frames_recorded,
        "cpu_s_per_recorded_s": (cpu_after - cpu_before) / (episodes * seconds),
        "loop_process_peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "writer_process_peak_rss_mb": writer_rss,
        "peak_pss_mb": memory.peak_mb,
        "peak_pss_parts_mb": memory.peak_parts_mb,
        "peak_processes": memory.peak_processes,
        "peak_by_process_mb": memory.peak_by_process_mb,
        # Memory over the session: does it grow from episode to episode (a leak) or stay flat?
        "peak_pss_by_episode_mb": peaks_within(memory.series, spans),
        "pss_series": relative_series(memory.series, origin_s),
        "episode_spans_s": relative_spans(spans, origin_s),
        "missed_reads": getattr(step, "missed_reads", 0),  # ours: survived as its control loop does
        # What one full collection in the loop process copied (private dirty pages it added) with the
        # writer open: ours keeps its heap frozen while a forked writer shares its pages (unfrozen it
        # copied ~120 MB); LeRobot's writes in its own process and shares nothing.
        "gc_collect_copied_mb": collection_copied_mb,
    }


def private_dirty_mb() -> float:
    """This process's private dirty memory, MB (pages it wrote since its fork, or ever)."""
    for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
        if line.startswith("Private_Dirty:"):
            return int(line.split()[1]) / 1024
    return 0.0


def collection_copies_mb() -> float:
    """How many MB of private dirty pages one full garbage collection adds to this process now."""
    before = private_dirty_mb()
    gc.collect()
    return round(private_dirty_mb() - before, 1)


def relative_series(series: list[tuple[float, float]], origin_s: float) -> list[tuple[float, float]]:
    """The samples as (seconds since `origin_s`, MB), for plots."""
    return [(round(t - origin_s, 2), mb) for t, mb in series]


def relative_spans(spans: list[tuple[float, float]], origin_s: float) -> list[tuple[float, float]]:
    """Each (start, end) as seconds since `origin_s`."""
    return [(round(start - origin_s, 2), round(end - origin_s, 2)) for start, end in spans]


def growth_mb(peaks: list[float | None]) -> float | None:
    """The last sampled episode's peak less the first's: how much the session grew (None with fewer
    than two sampled episodes)."""
    sampled = [mb for mb in peaks if mb is not None]
    return sampled[-1] - sampled[0] if len(sampled) >= 2 else None


def save_while_ticking(recorder: "Ours", timer: LoopTimer, step: Step | None) -> tuple[float, dict]:
    """Save on another thread (as RecordingSession does) while the loop keeps its 30 Hz deadlines
    (and, on the rig, keeps teleoperating: the reset period).

    Returns:
        (the longest the loop went past a deadline while the save ran, s; the save's drop counts)
    """
    outcome: dict = {}
    saver = threading.Thread(target=lambda: outcome.update(recorder.save()), name="save-episode")
    saver.start()
    worst_late_s, previous = 0.0, None
    while saver.is_alive():
        tick = timer.wait()
        if previous is not None:
            worst_late_s = max(worst_late_s, tick.start_s - previous - 1 / FPS)
        previous = tick.start_s
        if step is not None:
            step()
    saver.join()
    return max(worst_late_s, 0.0), outcome


def summary(values: list[float], *percentiles: int) -> dict[str, float]:
    """Percentiles (keys "p50", ...) and the maximum."""
    return {f"p{p}": float(np.percentile(values, p)) for p in percentiles} | {"max": float(max(values))}


def table(results: list[dict]) -> str:
    """Markdown table of all runs."""
    head = (
        "| impl | codec | period dev p50 / p99 / max ms | add_frame p50 / p99 / max ms | dropped / 1000 "
        "| loop pause p50 / p95 / max s | save p95 s | CPU s per s | peak RSS loop / writer MB "
        "| peak PSS MB (anon / file / shmem) |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n"
    )
    rows = []
    for r in results:
        dev, add, pause = r["period_dev_ms"], r["add_frame_ms"], r["pause_s"]
        writer = f"{r['writer_process_peak_rss_mb']:.0f}" if r["writer_process_peak_rss_mb"] else "-"
        parts = r.get("peak_pss_parts_mb", {})
        rows.append(
            f"| {r['impl']} | {r['vcodec']} | {dev['p50']:.2f} / {dev['p99']:.2f} / {dev['max']:.1f} "
            f"| {add['p50']:.2f} / {add['p99']:.2f} / {add['max']:.1f} | {r['dropped_per_1000']:.1f} "
            f"| {pause['p50']:.2f} / {pause['p95']:.2f} / {pause['max']:.2f} | {r['save_s']['p95']:.2f} "
            f"| {r['cpu_s_per_recorded_s']:.2f} | {r['loop_process_peak_rss_mb']:.0f} / {writer} "
            f"| {r['peak_pss_mb']:.0f} ({parts.get('anon', 0):.0f} / {parts.get('file', 0):.0f} / "
            f"{parts.get('shmem', 0):.0f}) |"
        )
    return head + "\n".join(rows)


def medians(results: list[dict]) -> list[dict]:
    """Each (impl, codec) over its repeated runs: the median of every headline figure (dropped
    frames: the worst run), with the range of the peak memory.

    One run's peak memory is not a stable figure: LeRobot's moved between 948 and 1,011 MB (h264)
    across runs on one idle machine, ours between 972 and 983, so a single pair of runs can put
    either side ahead. The summary compares these medians.
    """
    groups: dict[tuple[str, str], list[dict]] = {}
    for result in results:
        groups.setdefault((result["impl"], result["vcodec"]), []).append(result)

    def median(runs: list[dict], *path: str) -> float:
        values = []
        for run in runs:
            value = run
            for key in path:
                value = value[key]
            values.append(value)
        return float(np.median(values))

    out = []
    for (impl, vcodec), runs in groups.items():
        writer_rss = [run["writer_process_peak_rss_mb"] for run in runs if run["writer_process_peak_rss_mb"]]
        peaks = [run["peak_pss_mb"] for run in runs]
        out.append(
            {
                "impl": impl,
                "vcodec": vcodec,
                "runs": len(runs),
                "period_dev_ms": {"p99": median(runs, "period_dev_ms", "p99")},
                "pause_s": {"p95": median(runs, "pause_s", "p95")},
                "save_s": {"p95": median(runs, "save_s", "p95")},
                "dropped_per_1000": max(run["dropped_per_1000"] for run in runs),
                "cpu_s_per_recorded_s": median(runs, "cpu_s_per_recorded_s"),
                "loop_process_peak_rss_mb": median(runs, "loop_process_peak_rss_mb"),
                "writer_process_peak_rss_mb": float(np.median(writer_rss)) if writer_rss else None,
                "peak_pss_mb": float(np.median(peaks)),
                "peak_pss_range_mb": [min(peaks), max(peaks)],
                "peak_growth_mb": _median_or_none([growth_mb(run.get("peak_pss_by_episode_mb", [])) for run in runs]),
            }
        )
    return out


def _median_or_none(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return float(np.median(known)) if known else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=4, help="episodes per run (default: 4)")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each episode, s (default: 10)")
    parser.add_argument(
        "--codecs", default="h264,libsvtav1", help="comma-separated video codecs (default: h264,libsvtav1)"
    )
    parser.add_argument("--quick", action="store_true", help="smoke run: 2 episodes of 3 s")
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="runs of each (impl, codec) pair, alternating which goes first; the summary takes medians",
    )
    parser.add_argument(
        "--rig",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="teleoperate the virtual rig with its three cameras each tick (--no-rig: pre-rendered frames)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("outputs/bench/record_writer.json"),
        help="where the JSON of every run goes (default: outputs/bench/record_writer.json)",
    )
    parser.add_argument("--plot", type=Path, help="also draw each run's memory over time into this PNG")
    parser.add_argument("--run", nargs=2, metavar=("IMPL", "VCODEC"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.episodes, args.seconds = 2, 3.0
    if args.run:
        print(json.dumps(run(args.run[0], args.run[1], args.episodes, args.seconds, args.rig)))
        return
    # What the memory figures are worth on this machine now: the sampler against a known allocation.
    check = sampler_check()
    results = []
    for vcodec, repeat in itertools.product(args.codecs.split(","), range(args.repeats)):
        for impl in ("ours", "lerobot") if repeat % 2 == 0 else ("lerobot", "ours"):
            command = [sys.executable, "-m", "benchmarks.record_writer", "--run", impl, vcodec]
            command += ["--episodes", str(args.episodes), "--seconds", str(args.seconds)]
            command += ["--rig" if args.rig else "--no-rig"]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                print(done.stderr[-3000:], file=sys.stderr)
                raise SystemExit(f"run {impl} {vcodec} failed")
            results.append(json.loads(done.stdout.strip().splitlines()[-1]) | {"repeat": repeat})
            print(f"{impl} {vcodec} (run {repeat + 1} of {args.repeats}): done", file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    summary = medians(results)
    report = {"uptime": os.getloadavg(), "sampler_check": check, "results": results, "medians": summary}
    args.out.write_text(json.dumps(report, indent=1))
    print(table(results))
    print(f"sampler check: a {check['allocated_mb']} MB block showed as {check['seen_mb']} MB ({check['seen_ratio']}x)")
    for row in summary:
        low, high = row["peak_pss_range_mb"]
        runs = f"median of {row['runs']} runs" if row["runs"] > 1 else "1 run"
        growth = row["peak_growth_mb"]
        growth_text = f", first to last episode's peak {growth:+.0f} MB" if growth is not None else ""
        print(
            f"{row['impl']} {row['vcodec']}, {runs}: period dev p99"
            f" {row['period_dev_ms']['p99']:.2f} ms, peak PSS {row['peak_pss_mb']:.0f} MB ({low:.0f}-{high:.0f})"
            + growth_text
        )
    if args.plot:
        from benchmarks.record_memory_plot import write_memory_png

        print(f"memory over time: {write_memory_png(results, args.plot)}")
    print(f"\nloadavg at the end: {os.getloadavg()}; JSON: {args.out}")


if __name__ == "__main__":
    main()
