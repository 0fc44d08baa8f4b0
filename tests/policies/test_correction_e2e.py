"""so101-deploy --correction.enabled=true on the virtual rig: take over twice in one rollout, correct, hand back.

(And with --correction.record=corrections_only: each of two corrections is one episode, nothing else.)

The tiny ACT drives; the test types c on the command's terminal as a person would; once the command
says "you have the arms", the scripted operator makes a 3 s correction on both leaders; c again
hands back. Then:
- LeRobot loads the dataset; its `intervention` feature is LeRobot's (bool, shape (1,)), True on
  exactly the frames a person drove (`control.source` = person in the sidecar), and LeRobot's own
  loader selects them;
- every step the followers were sent, from the take-over key to the policy's first action after the
  hand back, is at most one ramp step (ramp_speed_deg_s / fps), and so is every goal step the leaders
  were sent (the bus trace);
- the episode's quality card lists both handovers with their timing.
"""

import itertools
import json
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from robot.joints import BIMANUAL_KEYS, Role, Side, arm_name
from tests.support.bus_trace import goal_writes, present_read_before
from tests.support.commands import ForegroundJob, sim_client
from tests.support.record_runs import rig_file
from tests.support.terminal_keys import plain, press, wait_recording

pytestmark = pytest.mark.slow
REPO = "test/corrected"
POLICY, HANDOVER, PERSON = 0, 1, 2  # control.source
RAMP_DEG = 30.0 / 30  # safety.ramp_speed_deg_s / fps
ENCODER_DEG = 360 / 4095 + 1e-4  # goals reach the bus in whole encoder steps
GRIPPER_COUNT_PERCENT = 0.2  # one encoder step of a gripper's range, in percent (its span is > 500 steps)
LEADERS = [arm_name(side, Role.LEADER) for side in Side]
BODY = np.array(["gripper" not in key for key in BIMANUAL_KEYS])


def deploy_args(tmp_path: Path, checkpoint: Path) -> list[str]:
    return [
        f"--config_path={rig_file(tmp_path)}",
        f"--policy.path={checkpoint}",
        "--policy.device=cpu",
        f"--dataset.repo_id={REPO}",
        f"--dataset.root={tmp_path / 'eval'}",
        "--dataset.vcodec=h264",
        "--session.num_episodes=1",
        "--session.episode_s=60",
        "--session.reset_s=0.5",
        "--engine.kind=async",
        "--correction.enabled=true",
    ]


def correct_once(job: ForegroundJob, client, number: int) -> None:
    """c, wait until the person has the arms, a 3 s correction on both leaders, c again."""
    said = plain(job.text).count("the policy has the arms again")
    press(job, "c")
    job.wait_until(lambda: plain(job.text).count("you have the arms") >= number, 60, f"handover {number}")
    duration = client.play("correction", arms=LEADERS)
    job.wait_until(lambda: client.operator()["finished"] == "correction", duration + 30, "the correction")
    press(job, "c")
    job.wait_until(lambda: plain(job.text).count("the policy has the arms again") > said, 60, f"hand back {number}")


def test_two_corrections_in_one_rollout(tmp_path: Path, tiny_act_dir: Path):
    with (
        sim_client(rig_file(tmp_path)) as client,
        ForegroundJob("so101-deploy", *deploy_args(tmp_path, tiny_act_dir), terminal=True) as job,
    ):
        wait_recording(job, "1/1", at_least_s=1.0)
        client.trace_clear()
        correct_once(job, client, 1)
        wait_recording(job, "1/1", at_least_s=plain_seconds(job) + 1.0)  # the policy drives again for a second
        correct_once(job, client, 2)
        wait_recording(job, "1/1", at_least_s=plain_seconds(job) + 1.0)
        traces = {arm: client.trace(arm) for arm in LEADERS}
        press(job, "n")  # end the episode: it is saved
        code = job.finish()
        assert code == 0, plain(job.text)[-3000:]
    for arm, records in traces.items():
        check_leader_steps(arm, records)
    check_dataset(tmp_path / "eval")


def plain_seconds(job: ForegroundJob) -> float:
    """The recorded seconds the status line shows last."""
    import re

    found = re.findall(r"episode 1/1 REC\s+(\d+\.\d)/", plain(job.text))
    return float(found[-1]) if found else 0.0


def check_leader_steps(arm: str, records: list[dict]) -> None:
    """Within each handover, every goal the leader was sent is at most one ramp step from the one before,
    and the first is at most one ramp step from where the leader was read just before it."""
    writes = goal_writes(records)
    assert len(writes) >= 10, f"{arm}: the leader was hardly driven ({len(writes)} goal writes)"
    handovers: list[list[tuple[int, dict[int, int]]]] = []
    for index, goals in writes:  # a handover's writes come a tick apart; seconds pass between handovers
        if not handovers or records[index]["t"] - records[handovers[-1][-1][0]]["t"] > 0.5:
            handovers.append([])
        handovers[-1].append((index, goals))
    assert len(handovers) == 2, f"{arm}: {len(handovers)} bursts of goal writes, expected one per handover"
    ramp_counts = RAMP_DEG * 4095 / 360
    for burst in handovers:
        start = present_read_before(records, burst[0][0])
        poses = [start] + [goals for _, goals in burst]
        body = [1, 2, 3, 4, 5]  # motor ids of the body joints (the gripper ramps in percent)
        steps = [abs(b[m] - a[m]) for a, b in itertools.pairwise(poses) for m in body]
        assert max(steps) <= ramp_counts + 2, f"{arm}: a leader goal step of {max(steps)} counts"


def check_dataset(root: Path) -> None:
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    dataset = LeRobotDataset(REPO, root=root, video_backend="pyav")
    feature = dataset.meta.features["intervention"]
    assert feature["dtype"] == "bool", feature
    assert tuple(feature["shape"]) == (1,), feature
    tagged = np.array(dataset.hf_dataset["intervention"]).reshape(-1).astype(bool)
    facts = pq.read_table(root / "meta" / "so101" / "episodes" / "episode-000000" / "timing.parquet").to_pydict()
    source = np.array(facts["control.source"])
    assert (tagged == (source == PERSON)).all(), "the intervention tag is not exactly the person's frames"
    assert tagged.sum() >= 2 * 2.5 * 30 * 0.5, "two ~3 s corrections leave at least a few seconds of frames"
    # LeRobot's loader selects the corrections (what a DAgger training filter does).
    corrections = dataset.hf_dataset.filter(lambda row: bool(np.asarray(row["intervention"]).reshape(-1)[0]))
    assert len(corrections) == tagged.sum()
    assert bool(np.asarray(dataset[int(np.flatnonzero(tagged)[0])]["intervention"]).reshape(-1)[0])
    sent = np.array([facts[f"action.{key}"] for key in BIMANUAL_KEYS]).T
    steps = np.abs(np.diff(sent, axis=0))
    handover = np.flatnonzero(source[1:] == HANDOVER)
    assert handover.size, "no frame recorded during a handover"
    assert steps[handover][:, BODY].max() <= RAMP_DEG + ENCODER_DEG, "a follower moved during a handover"
    # The person's first frames of each correction (before the scripted hands move): ramp steps toward the
    # leaders, which are up to arrive_tolerance_deg away, never one jump to them.
    takes = np.flatnonzero((source[1:] == PERSON) & (source[:-1] != PERSON))
    assert len(takes) == 2, takes
    first = np.concatenate([takes + k for k in range(3)])
    assert steps[first][:, BODY].max() <= RAMP_DEG + ENCODER_DEG, "the followers jumped to the leaders"
    # Into the person's first frames and the policy's first frames after a hand back: ramp steps.
    # Each follower's guard ramps, and ends its ramp, on its own: a frame where one arm still ramps is
    # not a ramp frame of the other, which may already follow its source under the normal caps (busy
    # run 5 saw a 2.4-degree step there, on the arm whose ramp had ended).
    ramp = np.array(facts["safety.ramp_mask"], dtype=np.int64)[1:]
    bits = (ramp[:, None] >> np.arange(len(BIMANUAL_KEYS))) & 1
    assert bits.any(), "no ramp frame recorded"
    for side in Side:
        arm = np.array([key.startswith(side) for key in BIMANUAL_KEYS])
        ramping = bits[:, arm].any(axis=1)
        ramp_steps = steps[ramping][:, arm & BODY]
        assert ramp_steps.size == 0 or ramp_steps.max() <= RAMP_DEG + ENCODER_DEG, f"{side}: a ramp step beyond it"
    quality = json.loads((root / "meta" / "so101" / "episodes" / "episode-000000" / "quality.json").read_text())
    handovers = quality["handovers"]
    assert len(handovers) == 2, handovers
    for entry in handovers:
        assert entry["to_person_s"] is not None, entry
        assert 0 < entry["to_person_s"] < 6.0, entry
        assert entry["correction_s"] >= 2.5, entry
        # What the leaders' motors were sent, in whole encoder steps: one step of rounding (a gripper's in %).
        assert entry["largest_leader_step_deg"] <= RAMP_DEG + GRIPPER_COUNT_PERCENT, entry
        assert not entry["timed_out"], entry


def driving_after_save(text: str) -> bool:
    """Since the last hand back: the correction's save began, and then the policy drove again."""
    saving = text.find("saving", text.rfind("the policy has the arms again"))
    return saving >= 0 and text.find("policy drives", saving) >= 0


def test_corrections_only_records_each_correction_as_one_episode(tmp_path: Path, tiny_act_dir: Path):
    args = [
        *deploy_args(tmp_path, tiny_act_dir),
        "--correction.record=corrections_only",
        "--session.num_episodes=2",
        "--session.episode_s=30",
        "--session.reset_s=0",
    ]
    with (
        sim_client(rig_file(tmp_path)) as client,
        ForegroundJob("so101-deploy", *args, terminal=True) as job,
    ):
        job.wait_until(
            lambda: "inference p50/p95" in plain(job.text) and "starved" in plain(job.text), 180, "a rollout"
        )
        time.sleep(1.0)  # the policy drives; nothing is recorded yet
        assert "REC" not in plain(job.text), "corrections-only recorded a frame the policy drove"
        correct_once(job, client, 1)
        # Saved, then the policy drives again (a take-over key before that is refused, and said so).
        job.wait_until(lambda: driving_after_save(plain(job.text)), 60, "the policy driving after the first save")
        correct_once(job, client, 2)
        code = job.finish()
        assert code == 0, plain(job.text)[-3000:]
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    dataset = LeRobotDataset(REPO, root=tmp_path / "eval", video_backend="pyav")
    assert dataset.meta.total_episodes == 2
    assert np.array(dataset.hf_dataset["intervention"]).astype(bool).all(), "a frame the person did not drive"
    for episode in range(2):
        frames = dataset.meta.episodes[episode]["length"]
        assert 2.5 * 30 <= frames <= 8 * 30, f"episode {episode}: {frames} frames for a ~3 s correction"
