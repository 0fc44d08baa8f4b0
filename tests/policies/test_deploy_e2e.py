"""so101-deploy end to end on the virtual rig with the tiny ACT and SmolVLA checkpoints.

Each run records two rollouts into an evaluation dataset; the test checks that LeRobot loads it,
that every recorded action is what the policy asked for after the safety layer (equal wherever the
safety layer did not intervene, never beyond the rig's limits), and that the inference facts are
kept beside the dataset, not as features.
"""

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from robot.joints import BIMANUAL_KEYS
from tests.support.commands import run
from tests.support.record_runs import rig_file
from tests.support.servo_bounds import lag_ticks, offset_deg

pytestmark = pytest.mark.slow
REPO = "test/eval"
ENCODER_STEP = 360 / 4095 + 1e-4  # a goal in degrees becomes whole encoder steps on its way to the bus
GRIPPERS = np.array(["gripper" in key for key in BIMANUAL_KEYS])
MAX_BODY_STEP = 300.0 * 2 / 30  # velocity cap times the longest gap it allows (two periods), degrees
MAX_GRIPPER_STEP = 25.0  # per-step gripper cap, percent
RAMP_STEP = 30.0 / 30  # safety.ramp_speed_deg_s / fps: a transition's largest step, degrees


def check_take_over_ramp(facts: dict, episode: int) -> None:
    """The policy taking charge is a transition: a ramp from the pose, at most RAMP_STEP a tick, until reached."""
    state = np.array([facts[f"state.{key}"] for key in BIMANUAL_KEYS]).T
    requested = np.array([facts[f"policy.{key}"] for key in BIMANUAL_KEYS]).T
    sent = np.array([facts[f"action.{key}"] for key in BIMANUAL_KEYS]).T
    ramp_bits = (np.array(facts["safety.ramp_mask"], dtype=np.int64)[:, None] >> np.arange(len(BIMANUAL_KEYS))) & 1
    if episode == 0:  # the tiny policy's first action is far from the virtual rig's start pose
        assert np.abs(requested[0] - state[0])[~GRIPPERS].max() >= 60.0
    for side in ("left", "right"):  # each follower's guard ramps, and ends its ramp, on its own
        body = np.array([key.startswith(side) and "gripper" not in key for key in BIMANUAL_KEYS])
        ramping = ramp_bits[:, body].any(axis=1)
        # Recording starts at the tick after the policy's first action (the second of the ramp). The ramp
        # starts from the last goal sent, and the fitted servo leaves a follower off that goal: by its
        # holding offset (gravity's give and the play), and, when the goal was itself moving at the ramp
        # speed (between rollouts the hold ramps to the policy's last request), by its lag behind it.
        lag = np.array([lag_ticks(key, 30) for key in BIMANUAL_KEYS])
        offsets = np.array([offset_deg(key) for key in BIMANUAL_KEYS])
        first = np.abs(sent[0] - state[0])
        bound = (2 + lag) * RAMP_STEP + offsets + 2 * ENCODER_STEP
        assert (first <= bound)[body].all(), (episode, side, first[body], bound[body])
        if np.abs(requested[0] - sent[0])[body].max() > ENCODER_STEP:
            assert ramping[0], f"{side}: the first frame of a rollout is the policy taking charge"
        else:
            # Already there: a follower the first rollout brought to where the policy asks (it asks much the
            # same every time) has nothing left to ramp in the next one (busy run 7 saw it on the right arm).
            assert episode > 0, f"{side}: the first rollout starts far from the policy's first action"
        # Every step into a frame of the transition (this arm's ramp, its gripper's included) is a ramp step.
        arm = np.array([key.startswith(side) for key in BIMANUAL_KEYS])
        during = ramp_bits[1:, arm].any(axis=1)
        steps = np.abs(np.diff(sent, axis=0))[during][:, body]
        steps = steps if steps.size else np.zeros(1)
        assert steps.max() <= RAMP_STEP + ENCODER_STEP, f"{side}: a step beyond the ramp"  # + one count


def deploy_args(tmp_path: Path, checkpoint: Path, *extra: str) -> list[str]:
    return [
        f"--config_path={rig_file(tmp_path)}",
        f"--policy.path={checkpoint}",
        "--policy.device=cpu",
        f"--dataset.repo_id={REPO}",
        f"--dataset.root={tmp_path / 'eval'}",
        "--dataset.vcodec=h264",
        "--session.num_episodes=2",
        "--session.episode_s=2",
        "--session.reset_s=0.5",
        *extra,
    ]


def timing(root: Path, episode: int):
    return pq.read_table(root / "meta" / "so101" / "episodes" / f"episode-{episode:06d}" / "timing.parquet")


def check_rollouts(root: Path) -> None:
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    dataset = LeRobotDataset(REPO, root=root, video_backend="pyav")
    assert dataset.meta.total_episodes == 2
    features = dataset.meta.features
    assert not any(key.startswith(("inference", "policy")) for key in features), "facts must not be features"
    item = dataset[0]
    assert tuple(item["observation.images.overhead"].shape) == (3, 96, 128)
    sent_total = 0
    for episode in range(2):
        facts = timing(root, episode).to_pydict()
        requested = np.array([facts[f"policy.{key}"] for key in BIMANUAL_KEYS]).T
        sent = np.array([facts[f"action.{key}"] for key in BIMANUAL_KEYS]).T
        assert np.isfinite(requested).all()
        assert np.isfinite(sent).all()
        check_take_over_ramp(facts, episode)
        # Sent = the policy's request after the safety layer: exactly the request (to one encoder step)
        # wherever the layer did not intervene, and a bounded step from the last goal where it did.
        mask = np.array(facts["safety.changed_mask"], dtype=np.int64)
        changed = (mask[:, None] >> np.arange(len(BIMANUAL_KEYS))) & 1 == 1
        assert (~changed).any(), "the safety layer intervened on every joint of every frame"
        np.testing.assert_allclose(sent[~changed], requested[~changed], atol=ENCODER_STEP)
        cap = np.where(GRIPPERS, MAX_GRIPPER_STEP, MAX_BODY_STEP) + ENCODER_STEP
        steps = np.diff(sent, axis=0)
        # A relieved gripper's goal is raised to just below where the jaws are (they could not close
        # further): the command may jump open (not the jaws), but never closes faster than the cap.
        relief = (np.array(facts["safety.relief_mask"], dtype=np.int64)[1:, None] >> np.arange(12)) & 1 == 1
        assert (steps[relief] >= -MAX_GRIPPER_STEP - ENCODER_STEP).all(), f"relief closed too fast: {steps[relief]}"
        capped = np.abs(steps)[~relief]
        assert (capped <= np.broadcast_to(cap, steps.shape)[~relief]).all(), f"a step beyond the safety caps: {steps}"
        sent_total += len(sent)
        assert set(facts) >= {
            "inference.chunk_id",
            "inference.chunk_latency_s",
            "inference.queue_depth",
            "inference.starved",
        }
        chunk_ids = np.array(facts["inference.chunk_id"])
        assert chunk_ids.max() >= 1, "a 2 s rollout spans several chunks"
        # The dataset's action column is what was sent (the recorder's own log of the frame).
        recorded = np.stack([dataset.hf_dataset[i]["action"].numpy() for i in _episode_rows(dataset, episode)])
        np.testing.assert_allclose(recorded, sent, atol=1e-4)
    assert sent_total == dataset.meta.total_frames


def _episode_rows(dataset, episode: int) -> range:
    meta = dataset.meta.episodes[episode]
    return range(int(meta["dataset_from_index"]), int(meta["dataset_to_index"]))


def test_tiny_act_two_rollouts_recorded(tmp_path, tiny_act_dir):
    result = run("so101-deploy", *deploy_args(tmp_path, tiny_act_dir, "--engine.kind=async"), timeout_s=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "2 rollout(s) saved" in result.stdout
    check_rollouts(tmp_path / "eval")


def test_tiny_smolvla_two_rollouts_recorded_through_the_compiled_runtime(tmp_path, tiny_smolvla_dir):
    # The PyTorch SmolVLA is the same predictor with LeRobot's forward (tests/policies/test_predictor.py);
    # here the exported graphs, built on first use into the cache, drive the arms.
    cache = tmp_path / "compiled"
    args = deploy_args(tmp_path, tiny_smolvla_dir, "--engine.kind=async", "--policy.runtime=openvino")
    result = run("so101-deploy", *args, timeout_s=300, env={"SO101_COMPILED_CACHE": str(cache)})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "compiled graphs cached in" in result.stderr
    assert len(list(cache.glob("*/fp32/prefix.onnx"))) == 1
    check_rollouts(tmp_path / "eval")


def test_an_act_checkpoint_on_a_compiled_runtime_is_one_line_with_the_fix(tmp_path, tiny_act_dir):
    args = [f"--config_path={rig_file(tmp_path)}", f"--policy.path={tiny_act_dir}", "--policy.runtime=onnxruntime"]
    result = run("so101-deploy", *args, "--record=false", timeout_s=120)
    assert result.returncode == 1
    lines = [line for line in (result.stdout + result.stderr).splitlines() if "SmolVLA checkpoints only" in line]
    assert len(lines) == 1
    assert "--policy.runtime=torch" in lines[0]
    assert "Traceback" not in result.stdout + result.stderr


def test_a_checkpoint_that_does_not_fit_stops_before_loading_weights(tmp_path, tiny_act_dir):
    broken = tmp_path / "checkpoint"
    broken.mkdir()
    for path in tiny_act_dir.iterdir():
        if path.name != "model.safetensors":
            (broken / path.name).write_bytes(path.read_bytes())
    (broken / "model.safetensors").write_bytes(b"not weights")  # never read: the contract fails first
    rig = rig_file(tmp_path, width=64, height=48)
    args = [f"--config_path={rig}", f"--policy.path={broken}", "--record=false"]
    result = run("so101-deploy", *args, timeout_s=120)
    assert result.returncode == 1
    assert "does not fit this rig" in result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_a_missing_checkpoint_is_a_clear_error(tmp_path):
    result = run(
        "so101-deploy",
        f"--config_path={rig_file(tmp_path)}",
        "--policy.path=/nonexistent",
        "--record=false",
        timeout_s=60,
    )
    assert result.returncode == 1
    text = result.stdout + result.stderr
    assert "/nonexistent" in text
    assert "Traceback" not in text
