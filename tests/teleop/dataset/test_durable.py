"""DurableDataset in this process: real LeRobot round trips, compatibility refusals, discard, sidecars."""

import json

import numpy as np
import pytest

from teleop.dataset.adopt import adopt
from teleop.dataset.durable import DurableDataset
from teleop.dataset.errors import (
    DatasetCorruptError,
    DatasetExistsError,
    DatasetLockedError,
    ForeignDatasetError,
    FrameError,
    IncompatibleDatasetError,
    NotADatasetError,
    WriterStateError,
)
from teleop.dataset.journal import read_journal
from teleop.dataset.sidecar import read_quality, read_timing
from tests.teleop.dataset.helpers import CAMERAS, TASK, check_loads, frame, load, record, snapshot, spec, tree


@pytest.fixture
def two_episodes(committed):
    """A dataset with two saved episodes (5 and 7 frames), closed."""
    return committed[0]


def test_a_new_dataset_is_created_and_reopened(tmp_path):
    root = tmp_path / "ds"
    with DurableDataset.open(spec(root, resume=False)) as dataset:
        assert dataset.report.created
        record(dataset, 0, 3)
    with DurableDataset.open(spec(root)) as dataset:
        assert not dataset.report.created
        assert (dataset.episodes, dataset.frames) == (1, 3)
    check_loads(root, [3])


def test_round_trip_loads_in_lerobot_with_everything_recorded(two_episodes):
    check_loads(two_episodes, [5, 7])
    dataset = load(two_episodes)
    assert dataset.meta.robot_type == "bi_so_follower"
    assert dataset.meta.fps == 30
    assert dataset.meta.video_keys == [f"observation.images.{name}" for name, _, _ in CAMERAS]
    assert dataset.meta.tasks.index.tolist() == [TASK]
    # Timing facts and quality cards are sidecars, not features.
    assert not any("capture" in key or "bus_read" in key for key in dataset.meta.features)


def test_each_episode_gets_its_own_files_so_saved_ones_are_never_rewritten(two_episodes):
    before = snapshot(two_episodes)
    with DurableDataset.open(spec(two_episodes)) as dataset:
        assert (dataset.report.episodes, dataset.report.frames) == (2, 12)
        assert not dataset.report.repair.changed
        record(dataset, 2, 4)
    after = snapshot(two_episodes)
    rewritten = {"meta/info.json", "meta/stats.json", "meta/so101/journal.json"}
    assert {path: digest for path, digest in before.items() if path not in rewritten} == {
        path: digest for path, digest in after.items() if path in before and path not in rewritten
    }
    assert read_journal(two_episodes).files.keys() >= {"data/chunk-000/file-002.parquet"}
    check_loads(two_episodes, [5, 7, 4])


def test_sidecars_hold_timing_and_quality_per_episode(two_episodes):
    timing = read_timing(two_episodes, 1)
    assert timing["frame_index"].tolist() == list(range(7))
    np.testing.assert_allclose(timing["bus_read_s"], [frame(1, i)[3]["bus_read_s"] for i in range(7)])
    assert read_quality(two_episodes, 1) == {"achieved_fps": 29.97, "episode": 1, "keep": True}


def test_discarded_episode_leaves_no_trace(two_episodes):
    before = snapshot(two_episodes)
    with DurableDataset.open(spec(two_episodes)) as dataset:
        dataset.begin_episode(TASK)
        for index in range(4):
            dataset.add_frame(*frame(2, index))
        dataset.discard_episode()
        saved = record(dataset, 2, 3)
        assert saved.index == 2
        assert saved.encoder_dropped_frames == 0
    check_loads(two_episodes, [5, 7, 3])
    with DurableDataset.open(spec(two_episodes)) as dataset:
        dataset.begin_episode(TASK)
        dataset.add_frame(*frame(3, 0))
    # closing with an unsaved episode discards it: the files are as the last save left them
    after = snapshot(two_episodes)
    assert after.keys() - before.keys() == {p for p in after if p not in before}
    assert read_journal(two_episodes).episodes == 3


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"fps": 15}, ["fps: the dataset has 30, this run asks for 15"]),
        (
            {"cameras": (*CAMERAS[:2], ("top", 48, 64))},
            ["camera 'overhead': in the dataset", "camera 'top': not in the dataset"],
        ),
        ({"cameras": (*CAMERAS[:2], ("overhead", 96, 128))}, ["camera 'overhead' shape: the dataset has [48, 64, 3]"]),
        ({"robot_type": "so101_follower"}, ["robot type: the dataset has 'bi_so_follower'"]),
        ({"vcodec": "libsvtav1"}, ["video codec: the dataset has h264, this run asks for libsvtav1"]),
    ],
)
def test_incompatible_resume_is_refused_and_changes_nothing(two_episodes, change, expected):
    before = snapshot(two_episodes)
    with pytest.raises(IncompatibleDatasetError) as refused:
        DurableDataset.open(spec(two_episodes, **change))
    assert len(refused.value.differences) == len(expected)
    for difference, start in zip(refused.value.differences, sorted(expected), strict=True):
        assert difference.startswith(start), difference
    assert "Next:" in str(refused.value)
    assert snapshot(two_episodes) == before


def test_existing_dataset_without_resume_is_refused(two_episodes):
    before = snapshot(two_episodes)
    with pytest.raises(DatasetExistsError, match="resume"):
        DurableDataset.open(spec(two_episodes, resume=False))
    assert snapshot(two_episodes) == before


def test_a_directory_that_is_not_a_dataset_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(NotADatasetError, match="not a LeRobot dataset"):
        DurableDataset.open(spec(tmp_path))
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_an_empty_existing_directory_becomes_the_dataset(tmp_path):
    with DurableDataset.open(spec(tmp_path)) as dataset:
        record(dataset, 0, 3)
    check_loads(tmp_path, [3])


def test_one_writer_at_a_time(two_episodes):
    with DurableDataset.open(spec(two_episodes)), pytest.raises(DatasetLockedError, match="another process"):
        DurableDataset.open(spec(two_episodes, lock_timeout_s=0.2))


def test_calls_out_of_order_say_what_to_do(tmp_path):
    with DurableDataset.open(spec(tmp_path / "ds")) as dataset:
        with pytest.raises(WriterStateError, match="begin_episode"):
            dataset.add_frame(*frame(0, 0))
        dataset.begin_episode(TASK)
        with pytest.raises(WriterStateError, match="no frames"):
            dataset.save_episode({})
        with pytest.raises(WriterStateError, match="still open"):
            dataset.begin_episode(TASK)
        dataset.add_frame(*frame(0, 0))
        with pytest.raises(FrameError, match="quality card"):
            dataset.save_episode({"bad": object()})
        assert dataset.save_episode({}).frames == 1


def test_a_dataset_written_by_lerobot_itself_resumes_once_adopted(theirs):
    before = tree(theirs)
    with pytest.raises(ForeignDatasetError, match=r"no meta/so101/journal\.json"):
        DurableDataset.open(spec(theirs))
    assert tree(theirs) == before
    assert adopt(theirs).journal.episodes == 1
    with DurableDataset.open(spec(theirs)) as dataset:
        assert (dataset.report.episodes, dataset.report.frames) == (1, 4)
        record(dataset, 1, 3)
    check_loads(theirs, [4, 3])


def test_a_lerobot_dataset_killed_before_finalize_is_reported_not_adopted(tmp_path):
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    from teleop.dataset.features import dataset_features

    root = tmp_path / "theirs"
    theirs = LeRobotDataset.create("test/fold", 30, dataset_features(CAMERAS), root=root, robot_type="bi_so_follower")
    (root / "data/chunk-000").mkdir(parents=True)
    (root / "data/chunk-000/file-000.parquet").write_bytes(b"PAR1 no footer: the writer was killed")
    del theirs
    before = tree(root)
    with pytest.raises(ForeignDatasetError):
        DurableDataset.open(spec(root))
    with pytest.raises(DatasetCorruptError, match="never finalized"):
        adopt(root)
    assert tree(root) == before


def test_journal_lists_every_committed_file(two_episodes):
    journal = read_journal(two_episodes)
    assert journal.state == "committed"
    assert journal.episodes == 2
    on_disk = json.loads((two_episodes / "meta/so101/journal.json").read_text())["files"]
    assert sorted(on_disk) == sorted(journal.files)
    assert "meta/so101/episodes/episode-000001/quality.json" in journal.files
    assert sum(1 for path in journal.files if path.startswith("videos/")) == 2 * len(CAMERAS)
