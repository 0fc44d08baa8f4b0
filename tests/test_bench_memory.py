"""record_writer's memory over a session: the sampler's timeline, per-episode peaks, growth, the plot."""

import io
import os
import subprocess
import sys
import time

import pytest
from PIL import Image

from benchmarks.memory_sampler import MemorySampler, peaks_within
from benchmarks.record_memory_plot import memory_png
from benchmarks.record_writer import growth_mb, medians


def sleeper() -> subprocess.Popen:
    """A child process that waits until it is killed."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])


def test_the_sampler_keeps_a_timeline_of_this_process_tree_on_the_monotonic_clock():
    # What the sampler reports, not how much it sees: a test process's memory moves by more than
    # any block a test could allocate. How much of an allocation it sees is a measurement
    # (benchmarks.memory_sampler.sampler_check, reported by record_writer beside its figures).
    kept, left_out = sleeper(), sleeper()
    try:
        sampler = MemorySampler(interval_s=0.05, exclude=[left_out.pid])
        started_s = time.monotonic()
        sampler.start()
        sampler.stop()
        stopped_s = time.monotonic()
    finally:
        for child in (kept, left_out):
            child.kill()
            child.wait()

    # A first sample at the start and a last at the stop, on this machine's monotonic clock
    # (rounded to the millisecond), in order.
    times = [t for t, _ in sampler.series]
    assert len(times) >= 2
    assert times == sorted(times)
    assert started_s - 0.001 <= times[0] <= times[-1] <= stopped_s + 0.001
    assert all(mb > 0 for _, mb in sampler.series)
    assert sampler.peak_mb == pytest.approx(max(mb for _, mb in sampler.series), abs=0.1)
    # Whose memory: this process and its children, less the excluded one and the sampler itself.
    pids = {int(name.split()[0]) for name in sampler.peak_by_process_mb}
    assert {os.getpid(), kept.pid} <= pids
    assert left_out.pid not in pids
    assert len(pids) == sampler.peak_processes
    assert set(sampler.peak_parts_mb) >= {"anon", "file"}


def test_each_episode_gets_the_highest_sample_inside_it():
    series = [(0.0, 900.0), (1.0, 950.0), (2.0, 940.0), (3.0, 990.0), (4.0, 985.0)]
    assert peaks_within(series, [(0.0, 2.0), (2.5, 4.0), (10.0, 11.0)]) == [950.0, 990.0, None]


def test_growth_is_the_last_sampled_episode_less_the_first():
    assert growth_mb([950.0, None, 990.0, 1000.0]) == 50.0
    assert growth_mb([950.0, 940.0]) == -10.0
    assert growth_mb([950.0]) is None
    assert growth_mb([]) is None


def _run(impl: str, vcodec: str, peaks: list[float]) -> dict:
    return {
        "impl": impl,
        "vcodec": vcodec,
        "episodes": len(peaks),
        "seconds": 2.0,
        "period_dev_ms": {"p99": 0.5},
        "pause_s": {"p95": 0.01},
        "save_s": {"p95": 0.5},
        "dropped_per_1000": 0.0,
        "cpu_s_per_recorded_s": 1.4,
        "loop_process_peak_rss_mb": 600.0,
        "writer_process_peak_rss_mb": None,
        "peak_pss_mb": max(peaks),
        "peak_pss_by_episode_mb": peaks,
        "pss_series": [(2.0 * i + 1.0, mb) for i, mb in enumerate(peaks)],
    }


def test_the_summary_reports_the_median_growth_over_the_session():
    runs = [_run("ours", "h264", [950, 960, 955]), _run("ours", "h264", [950, 951, 952])]
    runs += [_run("ours", "h264", [940, 990, 1010])]
    runs += [_run("lerobot", "h264", [900, 950])]
    by = {row["impl"]: row for row in medians(runs)}
    assert by["ours"]["peak_growth_mb"] == 5.0  # growths 5, 2 and 70
    assert by["lerobot"]["peak_growth_mb"] == 50.0
    # Runs from before the timeline existed still summarise.
    old = {k: v for k, v in _run("ours", "av1", [950]).items() if k not in ("peak_pss_by_episode_mb", "pss_series")}
    assert medians([old])[0]["peak_growth_mb"] is None


def test_the_memory_figure_has_a_panel_per_codec():
    h264 = [_run("ours", "h264", [950, 960]), _run("lerobot", "h264", [940, 990])]
    one = Image.open(io.BytesIO(memory_png(h264)))
    two = Image.open(io.BytesIO(memory_png([*h264, _run("ours", "libsvtav1", [1300, 1310])])))
    assert one.format == two.format == "PNG"
    assert one.width == two.width
    assert two.height > 1.8 * one.height
