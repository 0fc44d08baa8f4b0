"""Datasets LeRobot 0.6.1 cannot open: one line naming the file, and LeRobot's own way forward.

The fixtures are a copy of a dataset we recorded, damaged as real ones arrive: an older format
version, a lost task list, a corrupt episode index, a video cut to 0 bytes in a copy.
"""

import json
import shutil
from pathlib import Path

import pytest

from evaluation.episode_source import open_dataset as open_for_evaluation
from evaluation.errors import DatasetReadError
from policies.replay.dataset import open_dataset as open_for_replay
from policies.replay.errors import DatasetFormatError
from teleop.dataset.format_check import V20_CONVERTER, format_problem
from teleop.dataset.next_steps import CONVERT_MODULE

EPISODES_PARQUET = "meta/episodes/chunk-000/file-000.parquet"


def _version(version: str):
    def damage(root: Path) -> None:
        path = root / "meta" / "info.json"
        info = json.loads(path.read_text())
        info["codebase_version"] = version
        path.write_text(json.dumps(info))

    return damage


def _missing_tasks(root: Path) -> None:
    (root / "meta" / "tasks.parquet").unlink()


def _corrupt_episodes(root: Path) -> None:
    path = root / EPISODES_PARQUET
    path.write_bytes(b"\0" * path.stat().st_size)


def _empty_video(root: Path) -> None:
    next(iter(sorted(root.glob("videos/*/*/*.mp4")))).write_bytes(b"")


CASES = {
    "v2.1": (_version("v2.1"), ["format v2.1; LeRobot 0.6.1 reads v3.0", f"python -m {CONVERT_MODULE}", "--root="]),
    "v2.0": (_version("v2.0"), ["format v2.0", "lerobot==0.3.3", f"-m {V20_CONVERTER} --repo-id=", CONVERT_MODULE]),
    "v1.6": (_version("v1.6"), ["format v1.6", "open it with the LeRobot version that wrote it"]),
    "missing tasks": (_missing_tasks, ["meta/tasks.parquet is missing", "restore it from a copy"]),
    "corrupt episodes": (_corrupt_episodes, [EPISODES_PARQUET, "cannot be read as parquet", "corrupt", "Next:"]),
    "0-byte video": (_empty_video, ["is empty (0 bytes)", "Next: restore it"]),
}


@pytest.fixture
def damaged(tmp_path, two_episode_template):
    root = tmp_path / "ds"
    shutil.copytree(two_episode_template, root)
    return root


def test_a_dataset_lerobot_can_open_has_no_problem(damaged):
    assert format_problem(damaged) is None


@pytest.mark.parametrize("case", list(CASES))
def test_each_damage_is_one_line_naming_the_file_and_the_next_step(case, damaged):
    damage, fragments = CASES[case]
    damage(damaged)
    problem = format_problem(damaged)
    assert problem is not None
    assert "\n" not in problem
    assert str(damaged) in problem
    for fragment in fragments:
        assert fragment in problem, problem


def test_a_reader_that_needs_no_video_is_not_stopped_by_an_empty_one(damaged):
    _empty_video(damaged)
    assert format_problem(damaged, videos=False) is None


@pytest.mark.parametrize("case", ["v2.0", "missing tasks", "corrupt episodes"])
def test_the_judge_and_replay_refuse_with_that_line_not_lerobots(case, damaged):
    CASES[case][0](damaged)
    expected = format_problem(damaged, videos=False)
    with pytest.raises(DatasetReadError) as judged:
        open_for_evaluation(damaged)
    with pytest.raises(DatasetFormatError) as replayed:
        open_for_replay(damaged)
    assert str(judged.value) == str(replayed.value) == expected
