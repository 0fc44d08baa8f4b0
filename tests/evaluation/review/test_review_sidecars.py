"""The review page after LeRobot's own tools edited a dataset we recorded: stale quality cards are named.

LeRobot's delete_episodes renumbers the episodes after the one it deletes and leaves meta/so101/ behind
(here copied back, as a person copying the folder would): the card kept as episode 1 now describes
a deleted episode, so the page shows it for no episode and says so.
"""

import shutil

import httpx
import pytest

from teleop.dataset.durable import DurableDataset
from tests.support.review_server import serving
from tests.teleop.dataset.helpers import record_logged, spec


@pytest.fixture(scope="module")
def edited(tmp_path_factory):
    from lerobot.datasets.dataset_tools import delete_episodes
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    folder = tmp_path_factory.mktemp("edited")
    original = folder / "original"
    with DurableDataset.open(spec(original)) as dataset:
        for episode, frames in enumerate((5, 7, 7)):
            record_logged(dataset, episode, frames)
    root = folder / "fold"
    delete_episodes(LeRobotDataset("test/fold", root=original, video_backend="pyav"), [1], output_dir=root)
    shutil.copytree(original / "meta" / "so101", root / "meta" / "so101")
    return root


def test_the_list_shows_the_card_that_holds_and_names_the_stale_one(edited, tmp_path):
    with serving(edited, tmp_path / "store.sqlite") as server:
        page = httpx.get(f"{server.url}/").text
        timeline = httpx.get(f"{server.url}/episodes/1/timeline").json()
        fresh = httpx.get(f"{server.url}/episodes/0/timeline").json()
    assert "1 quality card in meta/so101/ left out: the dataset was edited by another tool" in page
    assert "#1: its sidecar logged other joint states (left_shoulder_pan.pos)" in page
    row0 = page[page.index('id="episode-0"') : page.index('id="episode-1"')]
    row1 = page[page.index('id="episode-1"') :]
    assert 'data-verdict="keep"' in row0
    assert "card stale" in row1
    assert timeline["sidecar"] == {
        "status": "stale",
        "reason": "its sidecar logged other joint states (left_shoulder_pan.pos)",
    }
    assert fresh["sidecar"]["status"] == "ok"
    assert len(fresh["state"]) == 12  # one trace per joint
    assert len(fresh["state"][0]) == 5  # of 5 frames
