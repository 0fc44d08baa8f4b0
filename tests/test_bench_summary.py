"""make bench's summary table: every row gets a ratio that reads "how many times better ours is"."""

import json
import math

from benchmarks.summary import Row, extract, markdown


def test_ratios_read_how_many_times_better_ours_is():
    assert Row("b", "latency", "ms", 3.1, 6.2).ratio == 2.0
    assert Row("b", "throughput", "fps", 120, 30, higher_is_better=True).ratio == 4.0
    assert Row("b", "dropped", "", 0, 0).ratio == 1.0  # equal, both zero
    assert math.isinf(Row("b", "starved", "", 0, 9.5).ratio)
    assert Row("b", "missing", "", None, 1.0).ratio is None


def test_an_infinite_ratio_is_shown_and_stays_valid_json():
    row = Row("b", "starved", "", 0, 9.5)
    assert "∞" in markdown([row])
    assert json.loads(json.dumps(row.as_dict()))["ratio"] == "inf"


def test_a_benchmark_summary_list_is_taken_as_it_is():
    rows = [
        {
            "benchmark": "x",
            "metric": "m",
            "unit": "s",
            "ours": 1.0,
            "anchor": 2.0,
            "anchor_name": "LeRobot",
            "higher_is_better": False,
            "target": "≤ 1 s",
            "ratio": 2.0,
        }
    ]
    (row,) = extract("x", {"summary": rows})
    assert (row.ours, row.anchor, row.ratio, row.target) == (1.0, 2.0, 2.0, "≤ 1 s")


def _run(impl: str, peak_mb: float, p99_ms: float, dropped: float = 0.0) -> dict:
    """One record_writer run's JSON, with the fields its summary reads."""
    return {
        "impl": impl,
        "vcodec": "h264",
        "period_dev_ms": {"p99": p99_ms},
        "pause_s": {"p95": 0.01},
        "save_s": {"p95": 0.5},
        "dropped_per_1000": dropped,
        "cpu_s_per_recorded_s": 1.4,
        "loop_process_peak_rss_mb": 600.0,
        "writer_process_peak_rss_mb": 400.0 if impl == "ours" else None,
        "peak_pss_mb": peak_mb,
    }


def test_repeated_recording_runs_are_compared_by_their_medians():
    from benchmarks.record_writer import medians

    runs = [_run("ours", 980, 0.2), _run("ours", 972, 1.1, dropped=1.0), _run("ours", 983, 0.3)]
    runs += [_run("lerobot", 1011, 12.0), _run("lerobot", 962, 21.0), _run("lerobot", 982, 11.0)]
    by = {row["impl"]: row for row in medians(runs)}
    assert (by["ours"]["peak_pss_mb"], by["ours"]["peak_pss_range_mb"], by["ours"]["runs"]) == (980, [972, 983], 3)
    assert by["ours"]["period_dev_ms"]["p99"] == 0.3
    assert by["ours"]["dropped_per_1000"] == 1.0  # the worst run, not the median: a drop is never averaged away
    assert by["lerobot"]["writer_process_peak_rss_mb"] is None

    rows = {row.metric: row for row in extract("record_writer", {"results": runs, "medians": list(by.values())})}
    memory = rows["recording: peak memory, summed PSS of the process tree, h264, median of 3 runs"]
    assert (memory.ours, memory.anchor) == (980, 982)
    assert rows["recording: loop period |dev| p99, h264"].anchor == 12.0


def test_a_single_recording_run_is_summarised_as_it_is():
    rows = extract("record_writer", {"results": [_run("ours", 980, 0.2), _run("lerobot", 950, 11.0)]})
    memory = next(row for row in rows if row.metric.startswith("recording: peak memory"))
    assert (memory.metric.endswith("h264"), memory.ours, memory.anchor) == (True, 980, 950)
