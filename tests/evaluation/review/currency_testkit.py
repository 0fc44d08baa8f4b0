"""Helpers of the currency tests: a small dataset of their own, judged, then changed the way people change them.

Every change goes through LeRobot's own code: a re-recording writes the folder again with another
scenario for one episode; a deletion is `dataset_tools.delete_episodes` followed by the same
folder swap `lerobot-edit-dataset` does in place (the old folder moved aside as `<name>_old`).
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from evaluation.episode_source import open_dataset
from evaluation.judge.run import RunSummary, run_judge
from evaluation.rubric import load_rubric
from evaluation.store import EvaluationStore, default_store_path
from evaluation.testing.fake_api_script import Reply
from evaluation.testing.fake_messages_server import FakeMessagesServer
from evaluation.testing.synthetic_dataset import Scenario, write_synthetic_dataset
from tests.evaluation.judge.judge_testkit import judge_client, judge_config

FRAMES = 30  # per episode: one second
SCENARIOS = (Scenario.FOLD_AND_PUSH, Scenario.IDLE, Scenario.FOLD_NO_PUSH)


def small_dataset(root: Path, scenarios: Sequence[Scenario] = SCENARIOS) -> Path:
    """A finalised dataset with one episode per scenario (episode k is the same bytes whenever it is written)."""
    return write_synthetic_dataset(root, scenarios, FRAMES)


def judge(root: Path, server: FakeMessagesServer, scores: dict[int, tuple[float, float, float]]) -> RunSummary:
    """Judge the dataset's unscored episodes (a real run through the SDK against the loopback API), store beside it.

    `scores` are the (R1, R2, R3) the judge answers per episode; an episode already scored under the
    same configuration and fingerprint is skipped, as so101-judge skips it.
    """
    for episode, labels in scores.items():
        server.script(Reply(scores=tuple(zip(("R1", "R2", "R3"), labels, strict=True))), episode=episode)
    config = judge_config(root, default_store_path(root), samples=1, concurrency=1, tag="smolvla")
    with EvaluationStore(default_store_path(root)) as store:
        summary = run_judge(open_dataset(root), load_rubric(), config, store, judge_client(server))
    assert server.problems() == []
    return summary


def rerecord(root: Path, scenarios: Sequence[Scenario]) -> None:
    """Record the dataset again in the same folder (an episode whose scenario differs gets new content)."""
    shutil.rmtree(root)
    small_dataset(root, scenarios)


def delete_in_place(root: Path, episodes: list[int]) -> None:
    """Delete episodes with LeRobot's delete_episodes, swapped in place as lerobot-edit-dataset does."""
    from lerobot.datasets.dataset_tools import delete_episodes
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    edited = root.with_name(root.name + "_edited")
    delete_episodes(LeRobotDataset(f"synthetic/{root.name}", root=root), episodes, output_dir=edited)
    shutil.move(root, root.with_name(root.name + "_old"))
    shutil.move(edited, root)
