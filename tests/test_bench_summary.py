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
    rows = [{"benchmark": "x", "metric": "m", "unit": "s", "ours": 1.0, "anchor": 2.0, "anchor_name": "LeRobot",
             "higher_is_better": False, "target": "≤ 1 s", "ratio": 2.0}]  # fmt: skip
    (row,) = extract("x", {"summary": rows})
    assert (row.ours, row.anchor, row.ratio, row.target) == (1.0, 2.0, 2.0, "≤ 1 s")
