"""so101-deploy --mode=sentry: the policy runs on, recorded in back-to-back episodes; kill -9 loses one at most.

The tiny ACT runs with 1.5 s episodes and no reset. Once three are saved (each a quality card beside
the dataset), the command is killed with SIGKILL mid-episode. Its child processes go with it, and a
resumed run opens the dataset (repairing a save the kill interrupted) and adds one more: every episode
saved before the kill is there, whole, and at most the one in progress was lost.
"""

import subprocess
import time
from pathlib import Path

import pytest

from tests.support.commands import run, script
from tests.support.processes import kill_9, wait_for
from tests.support.record_runs import rig_file, saved_episodes

pytestmark = pytest.mark.slow
REPO = "test/sentry"
EPISODE_S = 1.5


def args(tmp_path: Path, checkpoint: Path, *extra: str) -> list[str]:
    return [
        f"--config_path={rig_file(tmp_path)}",
        f"--policy.path={checkpoint}",
        "--policy.device=cpu",
        f"--dataset.repo_id={REPO}",
        f"--dataset.root={tmp_path / 'eval'}",
        "--dataset.vcodec=h264",
        f"--session.episode_s={EPISODE_S}",
        *extra,
    ]


def test_sentry_rotates_episodes_and_a_kill_9_loses_at_most_the_one_in_progress(tmp_path: Path, tiny_act_dir: Path):
    root = tmp_path / "eval"
    with (tmp_path / "deploy.log").open("wb") as log:  # a file, not a pipe nobody reads (it would fill and block)
        process = subprocess.Popen(
            [script("so101-deploy"), *args(tmp_path, tiny_act_dir, "--mode=sentry")],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for(lambda: saved_episodes(root) >= 3, 240, "three saved episodes")
        time.sleep(0.5 * EPISODE_S)  # into the next one
        saved = saved_episodes(root)
    finally:
        kill_9(process, tmp_path)  # the writer and the virtual rig go with it
    resumed = run(
        "so101-deploy",
        *args(tmp_path, tiny_act_dir, "--dataset.resume=true", "--session.num_episodes=1", "--session.reset_s=0"),
        timeout_s=300,
    )
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    dataset = LeRobotDataset(REPO, root=root, video_backend="pyav")
    # Every episode saved before the kill, perhaps the one whose save the kill caught, and the resumed one.
    assert saved + 1 <= dataset.meta.total_episodes <= saved + 2, (saved, dataset.meta.total_episodes)
    lengths = [int(e["length"]) for e in dataset.meta.episodes]
    assert all(length == round(EPISODE_S * 30) for length in lengths[:saved]), lengths
    assert dataset[len(dataset) - 1]["observation.state"].shape == (12,)
