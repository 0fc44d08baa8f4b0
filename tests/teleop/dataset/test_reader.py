"""The one reader of a dataset folder: what it reads of a saved dataset, each data file once, and how it refuses.

The dataset is a real one our writer saved (two episodes of 5 and 7 frames, three cameras; conftest.py),
copied and damaged the way real ones go wrong: info.json edited by hand, a data file lost or corrupted.
"""

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from teleop.dataset.errors import DatasetError, UnreadableDatasetError
from teleop.dataset.reader import open_reader
from tests.support.dataset_files import data_files, edit_info, recorded_actions
from tests.teleop.dataset.helpers import CAMERAS


@pytest.fixture
def dataset(tmp_path: Path, two_episode_template: Path) -> Path:
    root = tmp_path / "ds"
    shutil.copytree(two_episode_template, root)
    return root


def test_the_records_and_signals_of_a_saved_dataset(two_episode_template: Path):
    reader = open_reader(two_episode_template)
    assert (reader.repo_id, reader.fps) == ("local/ds", 30)
    assert reader.cameras == {name: (height, width) for name, height, width in CAMERAS}
    assert [(entry.index, entry.length) for entry in reader.episodes] == [(0, 5), (1, 7)]
    for entry in reader.episodes:
        assert entry.fps == reader.fps
        assert entry.data_path.is_file()
        assert [video.camera for video in entry.videos] == list(reader.cameras)
        for video in entry.videos:
            assert video.path.is_file()
            assert video.to_timestamp_s - video.from_timestamp_s == pytest.approx(entry.length / entry.fps)
        columns = reader.signals(entry)
        assert columns.action.dtype == np.float32
        assert columns.action.shape == (entry.length, len(reader.action_names))
        assert columns.state is not None
        assert columns.state.shape == (entry.length, len(reader.state_names))
        np.testing.assert_array_equal(columns.action, recorded_actions(two_episode_template, entry.index))
        assert columns.frame_index.tolist() == list(range(entry.length))
        frames, times_s = reader.timestamps(entry)
        assert sorted(frames.tolist()) == list(range(entry.length))
        assert np.sort(times_s) == pytest.approx(np.arange(entry.length) / entry.fps)


def test_worker_threads_share_one_read_of_each_data_file(dataset: Path):
    reader = open_reader(dataset)
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(reader.signals, reader.episodes * 8))
    for entry, columns in zip(reader.episodes * 8, results, strict=True):
        np.testing.assert_array_equal(columns.action, results[entry.index].action)
    for path in data_files(dataset):  # read once and kept: the files are not needed again
        path.unlink()
    assert len(reader.signals(reader.episodes[1]).action) == 7


def test_a_folder_without_a_dataset_is_refused_with_the_flag_to_pass(tmp_path: Path):
    with pytest.raises(UnreadableDatasetError) as refused:
        open_reader(tmp_path)
    message = str(refused.value)
    assert isinstance(refused.value, DatasetError)  # robot/cli.py prints it as one line
    assert f"{tmp_path} is not a LeRobot dataset (no meta/info.json)" in message
    assert "Next: pass the folder so101-record wrote, --dataset.root=<folder>" in message


def test_a_shape_edited_by_hand_is_named_before_any_data_is_read(dataset: Path):
    edit_info(dataset, lambda info: info["features"]["action"].update(shape=[13]))
    with pytest.raises(UnreadableDatasetError, match=r"feature 'action' has shape \[13\] but 12 names.*Next: fix"):
        open_reader(dataset)


def test_data_narrower_than_info_json_declares_names_the_file(dataset: Path):
    def widen(info: dict) -> None:
        action = info["features"]["action"]
        action.update(shape=[action["shape"][0] + 1], names=[*action["names"], "extra.pos"])

    edit_info(dataset, widen)
    reader = open_reader(dataset)
    with pytest.raises(UnreadableDatasetError) as refused:
        reader.signals(reader.episodes[0])
    assert str(data_files(dataset)[0]) in str(refused.value)
    assert "'action' holds 12 values per frame, but info.json declares 13. Next:" in str(refused.value)


def test_a_corrupt_data_file_names_the_file_and_the_next_step(dataset: Path):
    reader = open_reader(dataset)
    path = data_files(dataset)[0]
    path.write_bytes(b"not a parquet file")
    for read in (reader.signals, reader.timestamps):
        with pytest.raises(UnreadableDatasetError) as refused:
            read(reader.episodes[0])
        message = str(refused.value)
        assert f"cannot read {path}" in message
        assert "\n" not in message
        assert "Next: if its recording was interrupted, resume it to repair it (so101-record" in message
