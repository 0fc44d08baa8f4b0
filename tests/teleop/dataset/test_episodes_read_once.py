"""so101-edit's drops and splits read LeRobot's episode metadata file once, not once per episode, and get its rows.

LeRobot 0.6.1's `delete_episodes` takes each kept episode's metadata row by reading the whole
meta/episodes parquet file (`_load_episode_with_stats`): at 500 episodes that is 500 reads of a
file holding 500 rows of statistics. Our adapter reads it once for the whole call. The rows must be
exactly what LeRobot's own reader gives, and LeRobot's own reader must be back afterwards.
"""

import numpy as np
import pytest

from teleop.dataset.curate import lerobot_tools
from teleop.dataset.curate.lerobot_tools import _episodes_files_read_once

EPISODES = 6


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    names = ["a.pos", "b.pos"]
    feature = {"dtype": "float32", "shape": (2,), "names": names}
    features = {"action": feature, "observation.state": feature}
    root = tmp_path_factory.mktemp("ro") / "d"
    ds = LeRobotDataset.create("test/read_once", fps=30, root=root, features=features, use_videos=False)
    for episode in range(EPISODES):
        for frame in range(5 + episode):
            value = np.array([episode, frame], dtype=np.float32)
            ds.add_frame({"action": value, "observation.state": value, "task": f"task {episode % 2}"})
        ds.save_episode()
    ds.finalize()
    return LeRobotDataset("test/read_once", root=ds.root)


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(np.asarray(a[k]), np.asarray(b[k])) for k in a)


def test_each_row_is_lerobots_own_and_the_file_is_read_once(dataset, monkeypatch):
    from lerobot.datasets import dataset_tools

    own = dataset_tools._load_episode_with_stats
    expected = [own(dataset, i) for i in range(EPISODES)]
    reads = []
    real_read = dataset_tools.pd.read_parquet
    monkeypatch.setattr(
        dataset_tools.pd, "read_parquet", lambda path, *a, **k: reads.append(path) or real_read(path, *a, **k)
    )
    with _episodes_files_read_once():
        got = [dataset_tools._load_episode_with_stats(dataset, i) for i in range(EPISODES)]
    assert len(reads) == 1
    assert all(_same(g, e) for g, e in zip(got, expected, strict=True))
    assert dataset_tools._load_episode_with_stats is own


def test_a_drop_through_the_block_gives_the_dataset_lerobot_gives(dataset, tmp_path):
    from lerobot.datasets.dataset_tools import delete_episodes
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    plain = delete_episodes(dataset, [1, 4], output_dir=tmp_path / "plain", repo_id="test/plain")
    with _episodes_files_read_once():
        ours = delete_episodes(dataset, [1, 4], output_dir=tmp_path / "ours", repo_id="test/ours")
    a, b = (LeRobotDataset(d.repo_id, root=d.root) for d in (plain, ours))
    assert (a.meta.total_episodes, a.meta.total_frames) == (b.meta.total_episodes, b.meta.total_frames) == (4, 30)
    assert (tmp_path / "plain/meta/stats.json").read_text() == (tmp_path / "ours/meta/stats.json").read_text()
    assert lerobot_tools._episodes_files_read_once is _episodes_files_read_once
