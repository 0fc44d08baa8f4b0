"""Stop signals end so101-record and so101-teleop the way Ctrl-C does, on a virtual rig that outlives them.

Each command runs as a terminal's foreground job (a process group of its own, signalled as a whole,
as a terminal's Ctrl-C or hangup does) against `so101-sim`, so the followers can be read after the
command is gone: released at rest (`on_exit=rest_then_release`, the default) or holding with torque
on (`hold`). A save that the signal lands in completes; the episode in progress is discarded.
"""

import os
import signal
from pathlib import Path

import pytest

from tests.support.commands import ForegroundJob, process_state, sim_client, virtual_rig_file, wait_exited
from tests.support.follower_checks import assert_holding, assert_released_at_rest, followers
from tests.support.record_runs import load, record_args, rig_file, saved_episodes

pytestmark = pytest.mark.slow


def stopped_child(job: ForegroundJob, timeout_s: float = 180.0) -> int:
    """The job's child that stopped itself at a fault point (the dataset writer)."""
    found: list[int] = []

    def stopped() -> bool:
        found[:] = [pid for pid in job.children() if process_state(pid) == "T"]
        return bool(found)

    job.wait_until(stopped, timeout_s, "the writer stopped at its fault point")
    return found[0]


def test_sigterm_mid_episode_discards_it_keeps_the_saved_one_and_rests(tmp_path: Path):
    rig = rig_file(tmp_path)
    root = tmp_path / "dataset"
    args = record_args(tmp_path, rig, "--session.num_episodes=3", "--session.episode_s=4")
    with sim_client(rig) as client:
        start = followers(client)
        with ForegroundJob("so101-record", *args, terminal=True) as job:
            job.wait_for("episode 2/3 REC")  # episode 1 is durable (episode 2 starts only then)
            writers = job.children()
            job.signal_group(signal.SIGTERM)
            code = job.finish()
            assert code == 128 + signal.SIGTERM, job.text[-3000:]
            assert "stopped by SIGTERM" in job.text
            wait_exited(writers, 60, "the writer to exit")
            assert_released_at_rest(client, start)
    dataset = load(root)
    assert dataset.meta.total_episodes == 1
    assert [int(e["length"]) for e in dataset.meta.episodes] == [120]  # episode 2 was discarded
    assert saved_episodes(root) == 1


def test_sighup_mid_save_completes_the_save_and_rests(tmp_path: Path):
    rig = rig_file(tmp_path)
    root = tmp_path / "dataset"
    args = record_args(tmp_path, rig, "--session.num_episodes=2")
    with sim_client(rig) as client:
        start = followers(client)
        # The writer stops itself in the middle of episode 0's commit; the hangup lands there.
        with ForegroundJob("so101-record", *args, env={"SO101_DATASET_FAULT": "stop@save:journaled"}) as job:
            writer = stopped_child(job)
            job.signal_group(signal.SIGHUP)  # the terminal's hangup: the whole foreground group
            job.wait_for("SIGHUP: stopping safely")
            assert process_state(writer) == "T"  # still mid-save: the group's SIGHUP did not reach it
            os.kill(writer, signal.SIGCONT)
            code = job.finish()
            assert code == 128 + signal.SIGHUP, job.text[-3000:]
            assert "stopped by SIGHUP" in job.text
            wait_exited([writer], 60, "the writer to exit")
            assert_released_at_rest(client, start)
    dataset = load(root)
    assert dataset.meta.total_episodes == 1  # the save the hangup landed in
    assert [int(e["length"]) for e in dataset.meta.episodes] == [60]
    assert dataset[len(dataset) - 1]["observation.state"].shape == (12,)


def test_sighup_through_a_terminal_stops_teleop_holding(tmp_path: Path):
    rig = virtual_rig_file(tmp_path, timing="instant", calibrated=True)
    with (
        sim_client(rig) as client,
        ForegroundJob("so101-teleop", f"--config_path={rig}", "--rig.safety.on_exit=hold", terminal=True) as job,
    ):
        job.wait_for("following")
        job.signal_group(signal.SIGHUP)  # its terminal's output goes to /dev/null from here on
        assert job.finish() == 128 + signal.SIGHUP, job.text[-3000:]
        assert_holding(client)
