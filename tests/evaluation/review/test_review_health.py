"""The health view of a whole dataset: each check finds what was broken in a copy, and the page links each finding.

Every broken dataset is a copy of the 5-episode synthetic one (episodes 0..4, 90 frames each at
30 fps, one MP4 per camera shared by all episodes), changed the way a bad recording or a careless
edit would: a timestamp shifted, a column's max lowered in stats.json, a video file emptied, one
episode's signals written over another's, a joint held at LeRobot's ±100 clamp.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import httpx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from markupsafe import escape

from evaluation.episode_source import open_dataset
from evaluation.review import health
from evaluation.review.health import CHECKS, Finding, HealthReport, dataset_health
from evaluation.review.health_checks import CheckOutcome
from evaluation.testing.synthetic_dataset import NAMES
from tests.support.foreign_dataset import write_single_arm_percent
from tests.support.review_server import serving

DATA = "data/chunk-000/file-000.parquet"
OVERHEAD = "videos/observation.images.overhead/chunk-000/file-000.mp4"
FPS = 30


@pytest.fixture
def dataset(dataset_root: Path, tmp_path: Path) -> Path:
    """A private copy of the 5-episode dataset, to break."""
    root = tmp_path / "fold_virtual"
    shutil.copytree(dataset_root, root)
    return root


def _rewrite_data(root: Path, change: Callable[[dict[str, np.ndarray]], None]) -> None:
    """Rewrite the data parquet after `change` edited its columns (state/action as (rows, 12) arrays) in place."""
    path = root / DATA
    table = pq.read_table(path)
    columns = {name: table.column(name).combine_chunks() for name in table.column_names}
    arrays = {
        name: np.asarray(col.flatten().to_numpy(zero_copy_only=False)).reshape(len(col), -1).copy()
        if pa.types.is_fixed_size_list(col.type)
        else col.to_numpy(zero_copy_only=False).copy()
        for name, col in columns.items()
    }
    change(arrays)
    for name, col in columns.items():
        if pa.types.is_fixed_size_list(col.type):
            flat = pa.array(arrays[name].reshape(-1), type=col.type.value_type)
            rebuilt = pa.FixedSizeListArray.from_arrays(flat, col.type.list_size)
        else:
            rebuilt = pa.array(arrays[name], type=col.type)
        table = table.set_column(table.schema.get_field_index(name), table.schema.field(name), rebuilt)
    pq.write_table(table, path)


def _rows(arrays: dict[str, np.ndarray], episode: int) -> np.ndarray:
    return np.flatnonzero(arrays["episode_index"] == episode)


def _delay_from(root: Path, episode: int, frame: int, by_s: float) -> None:
    """Shift the timestamps of `frame` and the frames after it: one late step, as a pause in recording makes."""

    def change(arrays: dict[str, np.ndarray]) -> None:
        rows = _rows(arrays, episode)[frame:]
        assert arrays["frame_index"][rows[0]] == frame
        arrays["timestamp"][rows] += by_s

    _rewrite_data(root, change)


def _findings(report: HealthReport, check: str, episode: int | None = None) -> list[Finding]:
    return [f for f in report.of(check) if episode is None or f.episode_index == episode]


def test_the_clean_dataset_has_no_errors_and_every_check_ran(dataset_root: Path):
    report = dataset_health(open_dataset(dataset_root))
    assert [c.check for c in report.checks] == [name for name, _, _ in CHECKS]
    assert report.count("error") == 0, report.findings
    for check in ("signals", "timestamps", "stats", "videos"):
        summary = next(c for c in report.checks if c.check == check)
        assert report.of(check) == ()
        assert summary.passed == summary.checked > 0
    assert not [f for f in report.of("joint_ranges") if f.severity != "info"]
    ranges = next(c for c in report.checks if c.check == "joint_ranges").notes
    assert [line.split(":")[0] for line in ranges] == list(NAMES)  # each column's range over the dataset
    json.dumps(report.to_json())


def test_a_late_frame_is_found_on_its_episode_with_the_worst_step(dataset: Path):
    _delay_from(dataset, episode=2, frame=40, by_s=0.6 / FPS)  # 20 ms late: more than half a frame
    report = dataset_health(open_dataset(dataset))
    found = _findings(report, "timestamps")
    assert [f.episode_index for f in found] == [2]
    assert found[0].severity == "error"  # off its video frame: lerobot-train's decoder would refuse it
    assert "1 step off 1/fps" in found[0].detail
    assert "the worst 53.3 ms between frames 39 and 40" in found[0].detail  # 33.3 + 20 ms
    assert "50 frames off their video frame, the first frame 40 at 1.3533 s by 20.00 ms" in found[0].detail


def test_a_stats_max_lowered_is_named_by_feature_and_column(dataset: Path):
    path = dataset / "meta" / "stats.json"
    stats = json.loads(path.read_text())
    column = NAMES.index("left_elbow_flex.pos")
    stats["observation.state"]["max"][column] -= 5.0
    path.write_text(json.dumps(stats))
    report = dataset_health(open_dataset(dataset))
    found = _findings(report, "stats")
    assert len(found) == 1
    assert found[0].episode_index is None
    assert "observation.state max of left_elbow_flex.pos" in found[0].detail


def test_a_missing_stats_file_is_an_error(dataset: Path):
    (dataset / "meta" / "stats.json").unlink()
    found = _findings(dataset_health(open_dataset(dataset)), "stats")
    assert [(f.severity, f.episode_index) for f in found] == [("error", None)]
    assert "meta/stats.json is missing" in found[0].detail


def test_an_empty_video_file_is_an_error_naming_it(dataset: Path):
    source = open_dataset(dataset)  # opened whole; the file is emptied under it, as a bad copy would
    (dataset / OVERHEAD).write_bytes(b"")
    found = [f for f in _findings(dataset_health(source), "videos") if f.severity == "error"]
    assert len(found) == 1
    assert OVERHEAD in found[0].detail
    assert "0 bytes" in found[0].detail
    assert found[0].episode_index is None  # the file holds all five episodes
    assert "episodes 0, 1, 2, 3, 4" in found[0].detail


def test_an_episode_saved_twice_is_a_near_duplicate_of_the_earlier(dataset: Path):
    def copy_episode_1_over_2(arrays: dict[str, np.ndarray]) -> None:
        for key in ("observation.state", "action"):
            arrays[key][_rows(arrays, 2)] = arrays[key][_rows(arrays, 1)]

    _rewrite_data(dataset, copy_episode_1_over_2)
    report = dataset_health(open_dataset(dataset))
    found = _findings(report, "near_duplicates", episode=2)
    assert len(found) == 1
    assert "episode 2 nearly duplicates episode 1" in found[0].detail
    assert _findings(report, "near_duplicates", episode=1) == []  # the finding sits on the later one


def test_a_joint_held_at_exactly_100_is_the_clamp(dataset: Path):
    column = NAMES.index("right_shoulder_lift.pos")

    def clamp(arrays: dict[str, np.ndarray]) -> None:
        arrays["observation.state"][_rows(arrays, 3)[10:20], column] = 100.0

    _rewrite_data(dataset, clamp)
    found = [f for f in _findings(dataset_health(open_dataset(dataset)), "joint_ranges", 3) if f.severity == "warning"]
    assert len(found) == 1
    assert "10 frames at exactly ±100.000 on right_shoulder_lift.pos" in found[0].detail


def test_a_joint_whose_state_never_followed_its_action_is_named(dataset: Path):
    """As a public SO-101 recording's wrist_roll did (benchmarks/README.md, servo_fit): a dead joint."""
    column = NAMES.index("left_wrist_roll.pos")

    def freeze(arrays: dict[str, np.ndarray]) -> None:
        rows = _rows(arrays, 2)
        arrays["action"][rows, column] = np.linspace(-40.0, 40.0, len(rows))  # asked to turn 80 degrees
        arrays["observation.state"][rows, column] = 3.0  # and it never moved

    assert _findings(dataset_health(open_dataset(dataset)), "joints_follow") == []  # the clean copy follows
    _rewrite_data(dataset, freeze)
    report = dataset_health(open_dataset(dataset))
    found = _findings(report, "joints_follow")
    assert [(f.episode_index, f.severity) for f in found] == [(2, "warning")]
    assert "left_wrist_roll.pos: its state moved 0.0 while its action asked 80.0" in found[0].detail


def test_values_no_so101_reaches_are_found(dataset: Path):
    column = NAMES.index("left_wrist_flex.pos")

    def raw_ticks(arrays: dict[str, np.ndarray]) -> None:
        arrays["observation.state"][_rows(arrays, 1)[:5], column] = 2048.0  # raw servo ticks, not degrees

    _rewrite_data(dataset, raw_ticks)
    report = dataset_health(open_dataset(dataset))
    found = [f for f in _findings(report, "joint_ranges", 1) if f.severity == "warning"]
    assert len(found) == 1
    assert "5 frames outside what an SO-101 reaches, e.g. left_wrist_flex.pos at 2048.0" in found[0].detail
    outlier = [f for f in _findings(report, "joint_ranges", 1) if f.severity == "info"]
    assert len(outlier) == 1  # far above the other episodes too
    assert "left_wrist_flex.pos" in outlier[0].detail


def test_an_unreadable_data_file_gives_findings_not_an_exception(dataset: Path):
    source = open_dataset(dataset)
    (dataset / DATA).write_bytes(b"not a parquet file")
    report = dataset_health(source)
    assert [f.episode_index for f in report.of("signals")] == [0, 1, 2, 3, 4]
    assert [f.episode_index for f in report.of("timestamps")] == [0, 1, 2, 3, 4]
    assert all(DATA in f.detail for f in report.of("timestamps"))
    assert report.of("stats") == ()  # stats.json itself is sound; with no data there is nothing to compare


def test_a_check_that_raises_becomes_one_finding_and_the_others_still_run(dataset_root: Path, monkeypatch):
    def broken(source, arrays) -> CheckOutcome:
        raise KeyError("videos/observation.images.top/chunk_index")

    monkeypatch.setattr(health, "CHECKS", (("broken", "raises", broken), *CHECKS))
    report = health.dataset_health(open_dataset(dataset_root))
    assert [(f.severity, f.episode_index) for f in report.of("broken")] == [("warning", None)]
    assert "could not run on this dataset: KeyError" in report.of("broken")[0].detail
    assert [c.check for c in report.checks][1:] == [name for name, _, _ in CHECKS]


def test_someone_elses_percent_dataset_without_videos_is_checked(tmp_path: Path):
    root = write_single_arm_percent(tmp_path / "so101_percent")  # shoulder_lift at exactly 100 on every third frame
    shutil.rmtree(root / "videos")
    report = dataset_health(open_dataset(root))
    clamped = [f for f in report.of("joint_ranges") if "±100.000 on shoulder_lift.pos" in f.detail]
    assert [f.episode_index for f in clamped] == [0, 1]
    missing = [f.detail for f in report.of("videos") if f.severity == "error"]
    assert len(missing) == 2
    assert all("is missing" in d for d in missing)


def test_the_page_lists_each_check_and_links_findings_to_their_episodes(dataset: Path, tmp_path: Path):
    _delay_from(dataset, episode=3, frame=10, by_s=0.6 / FPS)
    with serving(dataset, tmp_path / "store.sqlite") as server:
        client = httpx.Client(base_url=server.url, timeout=120)
        assert 'href="/health"' in client.get("/").text  # the list links the view
        page = client.get("/health")
        assert page.status_code == 200
        for name, description, _ in CHECKS:
            assert f'id="findings-{name}"' in page.text
            assert str(escape(description)) in page.text  # as Jinja escapes it
        timestamps = page.text.split('id="findings-timestamps"')[1].split("</section>")[0]
        assert '<a href="/episodes/3">episode 3</a>' in timestamps
        report = client.get("/health.json").json()
        assert [c["check"] for c in report["checks"]] == [name for name, _, _ in CHECKS]
        assert {"check": "timestamps", "episode_index": 3} in [
            {"check": f["check"], "episode_index": f["episode_index"]} for f in report["findings"]
        ]
        assert report["counts"]["error"] >= 1
