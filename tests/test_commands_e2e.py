"""so101-sim and so101-calibrate end to end, then LeRobot's own teleoperation on the printed ports."""

import json
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from robot.joints import JOINT_NAMES, Side
from robot.virtual.client import VirtualRigClient
from tests.support.commands import SimProcess, run, script, virtual_rig_file
from tests.support.retries import retrying

pytestmark = pytest.mark.slow
BODY = [j for j in JOINT_NAMES if j != "gripper"]


def degrees(raw: int, calibration: dict) -> float:
    """LeRobot's DEGREES normalisation of a raw position."""
    middle = (calibration["range_min"] + calibration["range_max"]) / 2
    return (raw - middle) * 360 / 4095


def connect_time_miss(done: subprocess.CompletedProcess[str]) -> str | None:
    """Why a stock LeRobot command's run deserves a rerun: a reply missed while connecting (else None)."""
    if done.returncode != 0 and ("motor check failed" in done.stderr or "in connect" in done.stderr):
        return f"exit {done.returncode} while connecting: {done.stderr.strip().splitlines()[-1][:200]}"
    return None


def test_sim_calibrate_and_lerobot_teleoperate(tmp_path):
    rig_file = virtual_rig_file(tmp_path, timing="wire")
    sim = SimProcess(rig_file)
    try:
        ports = sim.ready["ports"]
        assert set(ports) == {"left_follower", "right_follower", "left_leader", "right_leader"}
        assert all(Path(p).is_symlink() for p in ports.values())

        calibrated = run("so101-calibrate", f"--config_path={rig_file}")
        assert calibrated.returncode == 0, calibrated.stderr
        assert "calibration written" in calibrated.stdout
        cal_root = tmp_path / "calibration"
        files = {
            "left_follower": cal_root / "robots/so_follower/e2e_rig_left.json",
            "right_follower": cal_root / "robots/so_follower/e2e_rig_right.json",
            "left_leader": cal_root / "teleoperators/so_leader/e2e_rig_left.json",
            "right_leader": cal_root / "teleoperators/so_leader/e2e_rig_right.json",
        }
        calibration = {arm: json.loads(path.read_text()) for arm, path in files.items()}

        client = VirtualRigClient(Path(sim.ready["control"]))
        client.play("cloth_fold", loop=True)
        samples: list[dict[str, list[int]]] = []
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                state = client.state()
                sample = {arm: [m["present_position"] for m in motors] for arm, motors in state.items()}
                sample["t"] = time.monotonic()
                # Body joints only: a gripper squeezing the cloth may trip its overload protection.
                sample["teleoperating"] = all(
                    m["torque_enabled"] for m in state["left_follower"][:5] + state["right_follower"][:5]
                )
                samples.append(sample)
                time.sleep(0.05)

        sampler = threading.Thread(target=sample)
        sampler.start()

        def teleoperate() -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [
                    script("lerobot-teleoperate"),
                    "--robot.type=bi_so_follower",
                    "--robot.id=e2e_rig",
                    f"--robot.calibration_dir={cal_root / 'robots/so_follower'}",
                    f"--robot.left_arm_config.port={ports['left_follower']}",
                    f"--robot.right_arm_config.port={ports['right_follower']}",
                    "--teleop.type=bi_so_leader",
                    "--teleop.id=e2e_rig",
                    f"--teleop.calibration_dir={cal_root / 'teleoperators/so_leader'}",
                    f"--teleop.left_arm_config.port={ports['left_leader']}",
                    f"--teleop.right_arm_config.port={ports['right_leader']}",
                    "--fps=30",
                    "--teleop_time_s=8",
                ],
                capture_output=True,
                text=True,
                timeout=120,
            )

        # Stock LeRobot pings and configures each motor once with no retry at connect; on a 2-core
        # machine late in the suite one reply missed its ~34 ms wait (seen twice in CI). One rerun,
        # counted in the session's retry tally; a real fault fails again. Misses anywhere else (its
        # teleop loop, its disconnect) are the emulator's to prevent, and fail the test.
        teleop = retrying(teleoperate, what="lerobot-teleoperate", retries=1, retry_if=connect_time_miss)
        stop.set()
        sampler.join()
        released = client.state()  # after LeRobot's exit
        client.close()
        assert teleop.returncode == 0, teleop.stderr[-3000:]
    finally:
        assert sim.stop() == 0
    assert not Path(sim.ready["control"]).exists()  # the sim cleaned up after Ctrl-C

    # The followers moved after the leaders: same joint angles, a few degrees of lag at most.
    during = [s for s in samples if s["teleoperating"]]
    assert during  # LeRobot's followers held torque while it teleoperated...
    followers = released["left_follower"] + released["right_follower"]
    assert not any(m["torque_enabled"] for m in followers)  # ...and its disconnect let go
    # Skip the first second: LeRobot's followers jump to the leaders' pose. (How many samples a
    # second yields is the machine's: the comparison below holds for whatever was sampled.)
    settled = [s for s in during if s["t"] > during[0]["t"] + 1.0]
    assert settled
    for side in Side:
        leader, follower = f"{side}_leader", f"{side}_follower"
        for index, joint in enumerate(JOINT_NAMES):
            if joint not in BODY:
                continue
            lead = np.array([degrees(s[leader][index], calibration[leader][joint]) for s in settled])
            follow = np.array([degrees(s[follower][index], calibration[follower][joint]) for s in settled])
            if np.ptp(lead) > 10:  # this joint moves in the demonstration
                assert np.ptp(follow) > 0.8 * np.ptp(lead), f"{follower} {joint} did not follow"
            assert np.mean(np.abs(lead - follow)) < 4.0, f"{follower} {joint} strays from {leader}"
