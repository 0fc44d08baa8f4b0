"""Whether a sidecar in meta/so101/ still belongs to its episode, after LeRobot's own dataset tools edit it.

The recorder logs every frame's joint states in the timing sidecar (teleop/recorder.py), so a sidecar
left behind by an edit that renumbers episodes is caught by its frame count, and, when two episodes
have the same length, by the states themselves.
"""

import shutil

import numpy as np
import pytest

from robot.joints import BIMANUAL_KEYS
from teleop.dataset.adopt import SET_ASIDE_DIR, adopt
from teleop.dataset.durable import DurableDataset
from teleop.dataset.errors import DatasetCorruptError
from teleop.dataset.journal import JOURNAL_PATH
from teleop.dataset.sidecar import SIDECAR_DIR, check_all, check_sidecar, sidecar_indices
from tests.teleop.dataset.helpers import record_logged, spec

LENGTHS = (5, 7, 7)  # episodes 1 and 2 differ only in their states


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    root = tmp_path_factory.mktemp("sidecars") / "ds"
    with DurableDataset.open(spec(root)) as dataset:
        for episode, frames in enumerate(LENGTHS):
            record_logged(dataset, episode, frames)
    return root


def _states(root, repo_id: str = "test/fold") -> dict[int, np.ndarray]:
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    dataset = LeRobotDataset(repo_id, root=root, video_backend="pyav")
    table = dataset.hf_dataset.with_format("numpy")
    episodes = np.asarray(table["episode_index"])
    states = np.stack(table["observation.state"])
    return {int(e): states[episodes == e] for e in np.unique(episodes)}


def test_every_sidecar_of_a_fresh_recording_belongs_to_its_episode(recorded):
    assert sidecar_indices(recorded) == [0, 1, 2]
    for index, states in _states(recorded).items():
        check = check_sidecar(recorded, index, BIMANUAL_KEYS, states)
        assert (check.status, check.usable) == ("ok", True), check


def test_after_lerobots_delete_episodes_the_left_behind_sidecars_are_named_stale(recorded, tmp_path):
    from lerobot.datasets.dataset_tools import delete_episodes
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    edited = tmp_path / "edited"
    delete_episodes(LeRobotDataset("test/fold", root=recorded, video_backend="pyav"), [0], output_dir=edited)
    assert not (edited / SIDECAR_DIR).exists()  # LeRobot's tools do not carry meta/so101/ along
    shutil.copytree(recorded / "meta" / "so101", edited / "meta" / "so101")  # a person copies it back
    states = _states(edited, "test/fold_modified")
    assert sorted(states) == [0, 1]

    renumbered = check_sidecar(edited, 0, BIMANUAL_KEYS, states[0])  # was episode 1 (7 frames)
    assert renumbered.status == "stale"
    assert renumbered.reason == "its sidecar describes 5 frames, it has 7"
    same_length = check_sidecar(edited, 1, BIMANUAL_KEYS, states[1])  # was episode 2: episode 1's sidecar
    assert same_length.status == "stale"
    assert same_length.reason == "its sidecar logged other joint states (left_shoulder_pan.pos)"


def test_a_dataset_recorded_by_another_tool_has_no_sidecar(recorded, tmp_path):
    bare = tmp_path / "bare"
    shutil.copytree(recorded, bare, ignore=shutil.ignore_patterns("so101"))
    check = check_sidecar(bare, 0, BIMANUAL_KEYS, _states(bare)[0])
    assert (check.status, check.usable) == ("missing", False)


def test_an_unreadable_sidecar_is_stale_with_the_reason(recorded, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(recorded, copy)
    (copy / SIDECAR_DIR / "episode-000001" / "timing.parquet").write_bytes(b"not parquet")
    check = check_sidecar(copy, 1, BIMANUAL_KEYS, _states(copy)[1])
    assert check.status == "stale"
    assert check.reason.startswith("its sidecar cannot be read")


def test_an_edited_dataset_is_refused_then_adopted_with_its_stale_sidecars_set_aside_and_named(recorded, tmp_path):
    from lerobot.datasets.dataset_tools import delete_episodes
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    edited = tmp_path / "edited"
    delete_episodes(LeRobotDataset("test/fold", root=recorded, video_backend="pyav"), [1], output_dir=edited)
    shutil.copytree(recorded / "meta" / "so101", edited / "meta" / "so101")  # journal and sidecars copied back
    assert [(c.index, c.status) for c in check_all(edited)] == [(0, "ok"), (1, "stale"), (2, "stale")]

    with pytest.raises(DatasetCorruptError, match="files of saved episodes changed") as refused:
        DurableDataset.open(spec(edited))
    assert "python -m teleop.dataset.adopt" in str(refused.value)
    (edited / JOURNAL_PATH).unlink()  # the step the refusal gives: rm <journal> && adopt

    adopted = adopt(edited)
    assert adopted.journal.episodes == 2
    assert adopted.set_aside == (
        "episode 1: its sidecar logged other joint states (left_shoulder_pan.pos)",  # episode 2's states now
        "episode 2: the dataset holds no such episode now",
    )
    assert sorted(p.name for p in (edited / SET_ASIDE_DIR).iterdir()) == ["episode-000001", "episode-000002"]
    assert sidecar_indices(edited) == [0]

    with DurableDataset.open(spec(edited)) as dataset:  # resumed: the next episode gets its own sidecar
        record_logged(dataset, 2, 4)
    assert [(c.index, c.status) for c in check_all(edited)] == [(0, "ok"), (1, "missing"), (2, "ok")]
