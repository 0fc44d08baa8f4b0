"""record_writer's memory over a session: the sampler's timeline, per-episode peaks, growth, the plot."""

import io
import time

import pytest
from PIL import Image

from benchmarks.memory_sampler import MemorySampler, peaks_within
from benchmarks.record_memory_plot import memory_png
from benchmarks.record_writer import growth_mb, medians


def test_the_sampler_keeps_a_timeline_on_the_monotonic_clock_that_shows_an_allocation():
    sampler = MemorySampler(interval_s=0.05)
    sampler.start()
    time.sleep(0.5)
    before_s = time.monotonic()
    block = bytearray(80 * 1024 * 1024)  # zero-filled by calloc: touch every page so it is resident
    for offset in range(0, len(block), 4096):
        block[offset] = 1
    time.sleep(0.6)
    after_s = time.monotonic()
    del block
    time.sleep(0.3)
    sampler.stop()

    assert len(sampler.series) >= 10
    times = [t for t, _ in sampler.series]
    assert times == sorted(times)
    (held,) = peaks_within(sampler.series, [(before_s + 0.2, after_s)])
    (idle,) = peaks_within(sampler.series, [(times[0], before_s)])
    assert held is not None
    assert idle is not None
    assert held - idle > 60  # the 80 MB block shows in the samples taken while it was held
    assert sampler.peak_mb == pytest.approx(max(mb for _, mb in sampler.series), abs=0.1)


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
        "impl": impl, "vcodec": vcodec, "episodes": len(peaks), "seconds": 2.0,
        "period_dev_ms": {"p99": 0.5}, "pause_s": {"p95": 0.01}, "save_s": {"p95": 0.5},
        "dropped_per_1000": 0.0, "cpu_s_per_recorded_s": 1.4, "loop_process_peak_rss_mb": 600.0,
        "writer_process_peak_rss_mb": None, "peak_pss_mb": max(peaks), "peak_pss_by_episode_mb": peaks,
        "pss_series": [(2.0 * i + 1.0, mb) for i, mb in enumerate(peaks)],
    }  # fmt: skip


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
