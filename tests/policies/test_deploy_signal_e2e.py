"""so101-deploy stopped by a terminal's Ctrl-C mid-rollout: the saved rollout stays, the followers hold.

The whole foreground group gets the SIGINT, as at a terminal; the virtual rig is `so101-sim`'s, so
the followers can be read once the command is gone.
"""

import signal
from pathlib import Path

import pytest

from tests.support.commands import ForegroundJob, sim_client, wait_exited
from tests.support.follower_checks import assert_holding
from tests.support.record_runs import rig_file

pytestmark = pytest.mark.slow
REPO = "test/eval"


def test_ctrl_c_mid_rollout_keeps_the_saved_rollout_and_holds(tmp_path: Path, tiny_act_dir: Path):
    rig = rig_file(tmp_path)
    root = tmp_path / "eval"
    args = [
        f"--config_path={rig}",
        f"--policy.path={tiny_act_dir}",
        "--policy.device=cpu",
        f"--dataset.repo_id={REPO}",
        f"--dataset.root={root}",
        "--dataset.vcodec=h264",
        "--session.num_episodes=2",
        "--session.episode_s=4",
        "--session.reset_s=0.5",
        "--engine.kind=async",
        "--rig.safety.on_exit=hold",
    ]
    with sim_client(rig) as client, ForegroundJob("so101-deploy", *args, terminal=True) as job:
        job.wait_for("episode 2/2 REC")  # rollout 1 is durable (rollout 2 starts only then)
        writers = job.children()
        job.signal_group(signal.SIGINT)  # Ctrl-C at the terminal: the whole group
        assert job.finish() == 128 + signal.SIGINT, job.text[-3000:]
        assert "stopped by Ctrl-C" in job.text
        wait_exited(writers, 60, "the writer to exit")
        assert_holding(client)
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    dataset = LeRobotDataset(REPO, root=root, video_backend="pyav")
    assert dataset.meta.total_episodes == 1
    assert [int(e["length"]) for e in dataset.meta.episodes] == [120]  # rollout 2 was discarded
