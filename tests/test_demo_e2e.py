"""so101-demo end to end, shortened: every step runs and leaves the artifact a user would look at.

One run of the real command (record -> dry run -> lerobot-train -> deploy -> judge -> report) on the
virtual rig, then one test per artifact: the demonstrations and the rollouts load in LeRobot, the
replay report and the judge dry run exist, the scores are in both stores, the report has its plots,
and the closing summary says where everything is and how to open the review page.
"""

import json
import sqlite3
from pathlib import Path

import pytest
from PIL import Image

from tests.support.commands import run

pytestmark = pytest.mark.slow
EPISODES = 2
ROLLOUTS = 1


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """(output folder, stdout) of one shortened so101-demo run."""
    out = tmp_path_factory.mktemp("demo") / "demo"
    result = run(
        "so101-demo",
        f"--output_dir={out}",
        "--teleop_s=0",  # tests/teleop covers so101-teleop
        "--lerobot_teleop=false",  # tests/test_commands_e2e.py runs LeRobot's teleoperation on the rig
        f"--num_episodes={EPISODES}",
        "--episode_s=3",
        "--reset_s=0.5",
        "--train_steps=2",
        f"--num_rollouts={ROLLOUTS}",
        "--rollout_s=2",
        "--camera_width=128",
        "--camera_height=96",
        "--from_the_box=true",  # brand-new arms: so101-ports and so101-setup run first (make demo skips them)
        timeout_s=600,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-3000:]
    return out, result.stdout


def _load(root: Path, repo_id: str):
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    return LeRobotDataset(repo_id, root=root, video_backend="pyav")


def test_the_demonstrations_load_in_lerobot(demo):
    out, _ = demo
    dataset = _load(out / "datasets" / "fold_cloth", "demo/fold_cloth")
    assert dataset.meta.total_episodes == EPISODES
    assert set(dataset.meta.camera_keys) == {
        f"observation.images.{c}" for c in ("left_wrist", "right_wrist", "overhead")
    }
    assert tuple(dataset[0]["observation.images.overhead"].shape) == (3, 96, 128)


def test_the_dry_run_wrote_its_report(demo):
    out, _ = demo
    report = json.loads((out / "replay" / "report.json").read_text())
    assert [e["episode"] for e in report["episodes"]] == [0]
    html = (out / "replay" / "report.html").read_text()
    assert "<img" in html
    assert "http://" not in html
    assert "https://" not in html


def test_lerobot_train_wrote_a_checkpoint_that_was_deployed(demo):
    out, stdout = demo
    checkpoint = out / "train" / "tiny_act" / "checkpoints" / "last" / "pretrained_model"
    assert (checkpoint / "model.safetensors").stat().st_size > 0
    assert "fits the rig" in stdout  # so101-deploy's contract check passed before the weights loaded


def test_the_rollouts_start_where_the_demonstrations_did(demo):
    """so101-deploy --start_pose=demonstrations: the followers were ramped there before the policy acted."""
    import numpy as np
    import pyarrow.parquet as pq

    from robot.joints import BIMANUAL_KEYS
    from tests.support.servo_bounds import lag_ticks, offset_deg

    out, stdout = demo
    demonstrations = out / "datasets" / "fold_cloth"
    assert f"the median first state of {EPISODES} episodes of {demonstrations.resolve()}" in stdout
    firsts = []
    for path in sorted((demonstrations / "data").rglob("*.parquet")):
        rows = pq.read_table(path, columns=["frame_index", "observation.state"]).to_pydict()
        pairs = zip(rows["observation.state"], rows["frame_index"], strict=True)
        firsts += [state for state, frame in pairs if frame == 0]
    assert len(firsts) == EPISODES
    start = np.median(np.array(firsts), axis=0)
    episode = out / "datasets" / "eval_tiny_act" / "meta" / "so101" / "episodes" / "episode-000000"
    timing = pq.read_table(episode / "timing.parquet")
    first_state = np.array([timing.column(f"state.{key}")[0].as_py() for key in BIMANUAL_KEYS])
    # The start pose, give or take what a fitted servo leaves off its goal (its holding offset, its lag
    # behind a goal moving at the ramp speed) and two ramp steps (1 degree each) of the policy's first
    # move: recording starts the tick after it.
    lag = np.array([lag_ticks(key, 30) for key in BIMANUAL_KEYS])
    bound = (2 + lag) * 1.0 + np.array([offset_deg(key) for key in BIMANUAL_KEYS]) + 2 * (360 / 4095)
    assert (np.abs(first_state - start) <= bound).all(), first_state - start


def test_the_rollouts_are_an_evaluation_dataset_with_inference_facts(demo):
    out, _ = demo
    root = out / "datasets" / "eval_tiny_act"
    dataset = _load(root, "demo/eval_tiny_act")
    assert dataset.meta.total_episodes == ROLLOUTS
    assert not [key for key in dataset.meta.features if key.startswith("inference")]
    timing = root / "meta" / "so101" / "episodes" / "episode-000000" / "timing.parquet"
    import pyarrow.parquet as pq

    assert "inference.chunk_id" in pq.read_schema(timing).names


@pytest.mark.parametrize(("folder", "episodes"), [("fold_cloth", EPISODES), ("eval_tiny_act", ROLLOUTS)])
def test_every_episode_is_scored_in_the_store_beside_its_dataset(demo, folder, episodes):
    out, _ = demo
    store = out / "datasets" / f"{folder}.evaluation.sqlite"
    with sqlite3.connect(store) as db:
        rows = db.execute(
            "SELECT r.scorer, e.episode_index, e.status FROM episode_results e JOIN runs r USING (run_id)"
        ).fetchall()
        criteria = db.execute("SELECT DISTINCT criterion, source FROM scores").fetchall()
    # Every episode by the heuristic, and by the virtual rig's ground truth from its card.
    assert sorted(rows) == [(scorer, i, "scored") for scorer in ("heuristic", "truth") for i in range(episodes)]
    assert sorted(criteria) == [(c, source) for c in ("R1", "R2", "R3") for source in ("heuristic", "truth")]


def test_the_judge_dry_run_shows_frames_prompt_and_cost(demo):
    out, _ = demo
    folder = out / "judge_dry_run"
    estimate = json.loads((folder / "estimate.json").read_text())
    assert estimate  # the cost estimate
    files = {p.name for p in (folder / "episode_000000").iterdir()}
    assert "prompt.md" in files
    assert any(name.endswith(".jpg") or name.endswith(".png") for name in files)


def test_the_comparison_report_has_its_plots(demo):
    out, _ = demo
    report = out / "report"
    summary = json.loads((report / "report.json").read_text())
    assert [p["name"] for p in summary["policies"]] == ["demonstrations", "tiny ACT"]
    plots = sorted((report / "plots").glob("*.png"))
    assert {p.stem.split("-")[0] for p in plots} >= {"heatmap", "criteria", "comparison"}
    for plot in plots:
        with Image.open(plot) as image:
            assert image.width > 100
            assert image.height > 100
            low, high = image.convert("L").getextrema()
            assert high - low > 50  # not a blank image


def test_the_summary_says_where_everything_is_and_how_to_review(demo):
    out, stdout = demo
    assert "demo finished" in stdout
    assert f"  so101-review --dataset.root={out / 'datasets' / 'eval_tiny_act'}\n" in stdout


def test_the_report_calls_heuristic_scores_heuristic_never_a_judges(demo):
    out, _ = demo
    report = out / "report"
    doc = json.loads((report / "report.json").read_text())
    assert [(p["scorer_label"], p["unadjusted"]["view"]) for p in doc["policies"]] == [("heuristic", "heuristic")] * 2
    assert {c["view"] for c in doc["comparisons"]} == {"heuristic", "effective"}
    for name in ("report.md", "report.json"):
        text = (report / name).read_text(encoding="utf-8").replace("docs/judge-research.md", "")
        assert "judge" not in text.lower(), name
    assert "| demonstrations | heuristic |" in (report / "report.md").read_text(encoding="utf-8")
    # The truth beside them, as the reference: each policy's truth means and each episode's truth.
    for policy in doc["policies"]:
        assert policy["truth"]["label"] == "virtual ground truth"
        assert all("truth" in e["criteria"]["R1"] for e in policy["episodes"])


def test_the_folder_is_marked_as_the_demos_so_the_next_run_may_empty_it(demo):
    from policies.demo.layout import MARKER, check_output_dir

    out, _ = demo
    assert (out / MARKER).is_file()
    check_output_dir(out)  # the next so101-demo with this --output_dir accepts it


def test_from_the_box_the_ports_were_found_and_the_motors_set_up_first(demo):
    import yaml

    out, stdout = demo
    ports = yaml.safe_load((out / "rig.yaml").read_text())["ports"]
    assert sorted(ports.values()) == [str(out / "run" / f"ttyACM{n}") for n in range(4)]  # written by so101-ports
    assert stdout.index("give every motor its id") < stdout.index("calibrate the four arms")
