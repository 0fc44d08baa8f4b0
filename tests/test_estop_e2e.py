"""The e-stop key freezes the followers through the exit, and a watchdog hold ends in a bounded ramp.

Each command runs on a pseudo-terminal (keys typed as a person does) against `so101-sim`, so the
arms can be read after the command is gone, and the virtual rig's bus trace shows every goal the
followers were sent:

    e in so101-teleop / -record / -deploy -> the last goal write is the present pose read just before
        it (the freeze); torque stays on through the exit, whatever on_exit says; leaders released;
        record/deploy keep only the episodes saved before the e-stop; so101-release then lets go
    a hot follower motor (HOLD) cooling while its leader is 60 degrees away -> the follower's goal
        moves there at no more than safety.ramp_speed_deg_s (1 degree a tick at 30 Hz)
"""

import itertools
import json
import re
from pathlib import Path

import pytest

from robot.virtual.client import VirtualRigClient
from tests.support.bus_trace import FOLLOWERS, check_frozen, goal_writes
from tests.support.commands import ForegroundJob, run, sim_client, virtual_rig_file, wait_until
from tests.support.record_runs import record_args, rig_file
from tests.support.terminal_keys import plain, press, wait_recording

pytestmark = pytest.mark.slow
STEPS_PER_DEG = 4095 / 360  # LeRobot's degrees: (steps - mid) * 360 / 4095
RAMP_COUNTS = 30.0 / 30 * STEPS_PER_DEG + 1  # ramp_speed_deg_s / fps, in encoder counts, plus one of rounding
LIFT_ID = 2  # shoulder_lift's motor


def printed_saved(text: str) -> int:
    """The summary's count of episodes (or rollouts) saved in this run."""
    found = re.findall(r"(\d+) (?:episode|rollout)\(s\) saved to", plain(text))
    assert len(found) == 1, plain(text)[-2000:]
    return int(found[0])


# --- e-stop --------------------------------------------------------------------------------------


def test_e_in_teleop_freezes_the_followers_through_the_exit_then_so101_release_lets_go(tmp_path: Path):
    rig = virtual_rig_file(tmp_path, timing="instant", calibrated=True)
    # The default on_exit (rest_then_release) and the operator folding a cloth: the followers move.
    with sim_client(rig) as client, ForegroundJob("so101-teleop", f"--config_path={rig}", terminal=True) as job:
        job.wait_for("following")
        client.trace_clear()
        press(job, "e")
        code = job.finish()
        assert code == 1, job.text[-3000:]
        assert "stopped by followers frozen: e-stop" in plain(job.text)
        check_frozen(client)
        released = run("so101-release", f"--config_path={rig}", "--yes=true")
        assert released.returncode == 0, released.stdout[-2000:] + released.stderr[-2000:]
        state = client.state()
        for arm in FOLLOWERS:
            assert not any(m["torque_enabled"] for m in state[arm]), (arm, state[arm])
            assert f"{arm}: torque off" in released.stdout


@pytest.fixture(scope="module")
def tiny_act(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny ACT checkpoint of tests/policies (3 cameras 96x128, 12 joints, chunk 10)."""
    from policies.testing.tiny_policies import write_tiny_act

    return write_tiny_act(tmp_path_factory.mktemp("tiny_act") / "checkpoint", chunk_size=10)


def deploy_args(tmp_path: Path, rig: Path, checkpoint: Path) -> list[str]:
    return [
        f"--config_path={rig}",
        f"--policy.path={checkpoint}",
        "--policy.device=cpu",
        "--dataset.repo_id=test/eval",
        f"--dataset.root={tmp_path / 'dataset'}",
        "--dataset.vcodec=h264",
        "--session.num_episodes=2",
        "--session.episode_s=4",
        "--session.reset_s=0.5",
    ]


@pytest.mark.parametrize("command", ["so101-record", "so101-deploy"])
def test_e_mid_episode_freezes_the_followers_and_keeps_only_the_saved_episode(tmp_path: Path, command: str, request):
    rig = rig_file(tmp_path)
    if command == "so101-record":
        repo, total = "test/fold", 3
        args = record_args(tmp_path, rig, "--session.num_episodes=3", "--session.episode_s=4")
    else:
        repo, total = "test/eval", 2
        args = deploy_args(tmp_path, rig, request.getfixturevalue("tiny_act"))
    with sim_client(rig) as client, ForegroundJob(command, *args, terminal=True) as job:
        wait_recording(job, f"2/{total}")  # episode 1 is durable: episode 2 starts only then
        client.trace_clear()
        press(job, "e")
        code = job.finish()
        assert code != 0, f"{command} exited {code} after an e-stop:\n{plain(job.text)[-3000:]}"
        assert "followers frozen: e-stop" in plain(job.text)
        check_frozen(client)
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    dataset = LeRobotDataset(repo, root=tmp_path / "dataset", video_backend="pyav")
    assert dataset.meta.total_episodes == 1  # episode 2 was discarded
    assert printed_saved(job.text) == dataset.meta.total_episodes
    assert dataset[len(dataset) - 1]["observation.state"].shape == (12,)


# --- a hold ending ---------------------------------------------------------------------------------


def lift(client: VirtualRigClient, arm: str) -> dict:
    return client.state(arm)[LIFT_ID - 1]


def test_a_hold_ending_60_degrees_from_the_leader_ramps_at_ramp_speed(tmp_path: Path):
    rig = virtual_rig_file(tmp_path, timing="instant", calibrated=True)
    calibration = tmp_path / "calibration"
    teleop = ("so101-teleop", f"--config_path={rig}", "--virtual_operator=idle", "--rig.safety.on_exit=hold")
    with sim_client(rig) as client, ForegroundJob(*teleop, terminal=True) as job:
        job.wait_for("following")
        client.set_temperature("left_follower", LIFT_ID, 58.0)  # above hold_temperature_c (55)
        job.wait_for("HOLD: left_follower")
        held = lift(client, "left_follower")["goal_position"]
        leader_cal = json.loads((calibration / "teleoperators/so_leader/e2e_rig_left.json").read_text())
        follower_cal = json.loads((calibration / "robots/so_follower/e2e_rig_left.json").read_text())
        low, high = leader_cal["shoulder_lift"]["range_min"], leader_cal["shoulder_lift"]["range_max"]
        target = lift(client, "left_leader")["present_position"] + round(60 * STEPS_PER_DEG)
        client.set_hand("left_leader", "shoulder_lift", (target - low) / (high - low))
        wait_until(lambda: abs(lift(client, "left_leader")["present_position"] - target) <= 3, 30, "the leader moved")
        assert lift(client, "left_follower")["goal_position"] == held  # held, not following
        # Where the follower's goal goes: the leader's angle (LeRobot's degrees from each range's middle).
        leader_mid = (low + high) / 2
        follower_mid = (follower_cal["shoulder_lift"]["range_min"] + follower_cal["shoulder_lift"]["range_max"]) / 2
        goal = round(follower_mid + lift(client, "left_leader")["present_position"] - leader_mid)
        client.trace_clear()
        client.set_temperature("left_follower", LIFT_ID, 30.0)  # cooled by more than cool_down_deg: the hold ends
        wait_until(lambda: abs(lift(client, "left_follower")["goal_position"] - goal) <= 3, 60, "the follower's goal")
        goals = [values[LIFT_ID] for _, values in goal_writes(client.trace("left_follower"))]
        assert goals[0] == held, f"the trace misses the start of the ramp: {goals[:5]}"
        reached = next(i for i, g in enumerate(goals) if abs(g - goal) <= 3)
        steps = [abs(b - a) for a, b in itertools.pairwise(goals[: reached + 1])]
        assert max(steps) <= RAMP_COUNTS, f"a step beyond ramp_speed_deg_s: {goals[: reached + 1]}"
        travel_deg = (goals[reached] - held) / STEPS_PER_DEG
        assert abs(travel_deg - 60) <= 2, travel_deg
        press(job, "q")
        code = job.finish()
        assert code == 0, job.text[-3000:]
        state = client.state()
        for arm in FOLLOWERS:  # on_exit=hold
            assert all(m["torque_enabled"] for m in state[arm]), (arm, state[arm])
