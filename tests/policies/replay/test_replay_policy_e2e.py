"""so101-replay's open-loop policy dry runs on a virtual-rig recording: the tiny ACT, and the recorded actions.

The tiny ACT (random weights) runs as a user would run it; the recorded-actions predictor, whose
chunk for frame k is the recorded actions k, k+1, ..., runs through the command's `main(argv)` in
this process (what the script runs) and must score zero error: a check of the measurement itself.
"""

from pathlib import Path

import pytest

from robot.joints import BIMANUAL_KEYS
from tests.support.checkpoints import TINY_ACT_CHUNK
from tests.support.recordings import EPISODE_FRAMES, Recording
from tests.support.replays import replay, replay_here


@pytest.mark.slow
def test_an_open_loop_act_dry_run_reports_error_seams_and_latency(
    tmp_path: Path, recording: Recording, tiny_act_dir: Path
):
    act = replay(recording, recording.root, tmp_path / "report", f"--policy.path={tiny_act_dir}", "--policy.device=cpu")
    assert "act checkpoint" in act.report["run"]["policy"]
    [entry] = act.report["episodes"]
    assert entry["frames_replayed"] == EPISODE_FRAMES
    assert entry["stopped_by"] == "done"
    policy = entry["policy"]
    assert policy["ticks"] == EPISODE_FRAMES
    assert policy["starved_ticks"] == 0
    assert set(policy["error"]["mean_abs"]) == set(BIMANUAL_KEYS) == set(policy["rmse"])
    assert all(policy["error"]["max_abs"][k] >= policy["error"]["mean_abs"][k] > 0 for k in BIMANUAL_KEYS)
    assert policy["body_mean_abs_deg"] > 0  # random weights: far from the demonstration
    chunks = EPISODE_FRAMES // TINY_ACT_CHUNK  # chunks of 10 over 60 frames: 6 chunks, 5 seams, each measured
    assert (policy["chunks"], policy["seams"]) == (chunks, chunks - 1)
    assert policy["seam_jump_mean_deg"] > 0
    assert policy["seam_jump_max_deg"] >= policy["seam_jump_mean_deg"]
    assert policy["within_chunk_step_mean_deg"] > 0
    assert policy["seam_ratio"] is not None
    assert 0 < policy["latency_p50_ms"] <= policy["latency_p95_ms"] <= policy["latency_max_ms"]
    assert policy["blocked_s"] > 0  # sync inference runs on the loop's thread
    assert act.report["summary"]["policy_body_mean_abs_deg"] == pytest.approx(policy["body_mean_abs_deg"])
    for text in ("Policy (open loop) against the recorded actions", "chunk seams", "chunk latency p50"):
        assert text in act.html
    assert 'alt="policy error and latency"' in act.html


@pytest.mark.slow
def test_the_recorded_predictor_scores_zero_error(
    tmp_path: Path, recording: Recording, capsys: pytest.CaptureFixture[str]
):
    """The measurement's own sanity check: a 'policy' that returns the recorded next actions."""
    recorded = replay_here(
        capsys, recording, recording.root, tmp_path / "report", "--policy.path=recorded", "--dataset.episodes=all"
    )
    assert recorded.report["run"]["policy"] == "the recorded actions (sync engine)"
    for entry in recorded.report["episodes"]:
        policy = entry["policy"]
        assert policy["ticks"] == EPISODE_FRAMES
        assert policy["starved_ticks"] == 0
        assert max(policy["error"]["max_abs"].values()) <= 1e-6
        assert policy["body_mean_abs_deg"] <= 1e-6
        assert policy["chunks"] == EPISODE_FRAMES // 10  # its chunks are 10 long, as the tiny ACT's
        # At the seams it moves exactly as the recording did there: the seam measure reads the motion.
        assert policy["seam_jump_mean_deg"] == pytest.approx(policy["recorded_step_at_seams_mean_deg"], abs=1e-6)
