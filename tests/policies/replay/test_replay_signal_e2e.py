"""so101-replay on its virtual target, stopped by SIGTERM mid-replay: a report of what ran, followers at rest."""

import json
import signal
from pathlib import Path

import pytest

from tests.support.commands import ForegroundJob, sim_client
from tests.support.follower_checks import assert_released_at_rest, followers
from tests.support.recordings import EPISODE_FRAMES, Recording
from tests.support.rig_files import rig_yaml

pytestmark = pytest.mark.slow


def test_sigterm_mid_replay_writes_the_report_and_rests(tmp_path: Path, recording: Recording):
    rig = rig_yaml(tmp_path)  # a virtual rig of this test's own, served by so101-sim
    args = [
        f"--config_path={rig}",
        f"--dataset.root={recording.root}",
        "--dataset.episodes=0,1",
        "--target=virtual",
        f"--report.output_dir={tmp_path / 'report'}",
        "--report.stills=0",
    ]
    with sim_client(rig) as client:
        start = followers(client)
        with ForegroundJob("so101-replay", *args) as job:
            job.wait_for("episode 0: replaying")
            job.signal_group(signal.SIGTERM)
            assert job.finish() == 128 + signal.SIGTERM, job.text[-3000:]
            assert "stopped by SIGTERM" in job.text
            assert_released_at_rest(client, start)
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["summary"]["stopped_by"] == "SIGTERM"
    assert report["episodes"], "the report covers what ran before the signal"
    assert report["summary"]["frames_replayed"] < 2 * EPISODE_FRAMES  # episode 1 never ran to its end
