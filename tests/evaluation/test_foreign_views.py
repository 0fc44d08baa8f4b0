"""Someone else's single-arm dataset: its cameras mapped onto our views, scored without video, browsed without it.

The dataset is LeRobot's own writing (tests/support/foreign_dataset.py): joints named bare, in
percent of range, cameras `front` and `top`. A copy without its `videos/` is the dataset as it is
often shared. The judge's heuristic scorer and the review page need only the joints; the LLM judge
needs pictures and says how to get them or how to go without.
"""

import json
import shutil
from pathlib import Path

import httpx
import pytest

from evaluation.commands.judge import main as judge_main
from evaluation.episode_source import open_dataset
from evaluation.errors import ConfigError, DatasetReadError
from evaluation.store import EvaluationStore
from evaluation.view_map import view_map
from robot.joints import Side
from robot.shell.exit_codes import Exit
from tests.support.foreign_dataset import EPISODES, FRAMES, write_single_arm_percent
from tests.support.review_server import serving


@pytest.fixture(scope="module")
def foreign(tmp_path_factory) -> Path:
    return write_single_arm_percent(tmp_path_factory.mktemp("theirs") / "so101_percent")


@pytest.fixture
def without_videos(foreign, tmp_path) -> Path:
    root = tmp_path / "so101_percent"
    shutil.copytree(foreign, root, ignore=shutil.ignore_patterns("videos"))
    return root


def _one_line(capsys) -> str:
    captured = capsys.readouterr()
    return " ".join((captured.out + captured.err).split())


def test_a_view_map_is_read_as_written_and_mistakes_are_named():
    assert view_map("overhead:top, left_wrist:observation.images.front") == {"overhead": "top", "left_wrist": "front"}
    assert view_map("") == {}
    with pytest.raises(ConfigError, match=r"'overhead' is not view:camera; for example --dataset.views=overhead:top"):
        view_map("overhead")
    with pytest.raises(ConfigError, match=r"'top' is not one of our views"):
        view_map("top:overhead")
    with pytest.raises(ConfigError, match=r"maps 'overhead' twice"):
        view_map("overhead:top,overhead:front")
    with pytest.raises(ConfigError, match=r"one camera two views"):
        view_map("overhead:top,left_wrist:top")


def test_the_map_puts_their_camera_under_our_view_and_the_fingerprint_does_not_depend_on_it(foreign, without_videos):
    plain = open_dataset(foreign)
    assert plain.cameras == ("front", "top")
    assert dict(plain.arms) == {Side.LEFT: ""}  # bare joint names: one arm, read as the left
    assert [ep.views for ep in plain.episodes] == [(), ()]
    mapped = open_dataset(foreign, views={"overhead": "top", "left_wrist": "front"})
    segment = mapped.episodes[1].video("overhead")
    assert (segment.camera, segment.path.is_file()) == ("top", True)
    assert mapped.episodes[1].views == ("left_wrist", "overhead")
    bare = open_dataset(without_videos, views={"overhead": "top"})
    assert [ep.views for ep in bare.episodes] == [(), ()]
    assert len(bare.missing_videos) == 2  # one shared file per camera
    for ep in range(EPISODES):  # scores stay bound to the episode whichever map or videos it is opened with
        fingerprints = {s.fingerprint(s.episodes[ep]) for s in (plain, mapped, bare)}
        assert len(fingerprints) == 1


def test_a_map_that_names_a_camera_the_dataset_lacks_lists_the_cameras(foreign):
    with pytest.raises(DatasetReadError, match=r"no camera 'wrist'.*its cameras are \['front', 'top'\]"):
        open_dataset(foreign, views={"overhead": "wrist"})


def test_the_heuristic_scorer_scores_the_single_arm_without_videos(without_videos, tmp_path, capsys):
    store = tmp_path / "store.sqlite"
    code = judge_main(
        [
            f"--dataset.root={without_videos}",
            "--scorer=heuristic",
            "--dataset.views=overhead:top",
            f"--store_path={store}",
        ]
    )
    assert code == 0, _one_line(capsys)
    with EvaluationStore(store) as s:
        rows = s.query("SELECT episode_index, status, motion_check_json FROM episode_results ORDER BY episode_index")
    assert [(r["episode_index"], r["status"]) for r in rows] == [(i, "scored") for i in range(EPISODES)]
    for row in rows:
        arms = json.loads(row["motion_check_json"])["arms"]
        assert [(a["side"], a["grasps"], a["releases"]) for a in arms] == [("left", 1, 1)]  # the gripper's one cycle


def test_the_llm_judge_names_the_missing_videos_and_the_way_on(without_videos, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "never-used")
    args = [f"--dataset.root={without_videos}", "--dataset.views=overhead:top", f"--store_path={tmp_path / 's'}"]
    assert judge_main(args) == Exit.FAILED
    out = _one_line(capsys)
    assert "2 video file(s) of" in out
    assert "are missing (first: videos/observation.images." in out
    assert f"so101-judge --dataset.root={without_videos} --dataset.views=overhead:top" in out
    assert out.rstrip().endswith("--scorer=heuristic")
    assert not (tmp_path / "s").exists()  # refused before the store was opened


def test_the_llm_judge_on_unmapped_cameras_suggests_a_map(foreign, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "never-used")
    assert judge_main([f"--dataset.root={foreign}", f"--store_path={tmp_path / 's'}", "--dry_run=true"]) == Exit.FAILED
    out = _one_line(capsys)
    assert "none of our camera views ['left_wrist', 'right_wrist', 'overhead'] (its cameras: ['front', 'top'])" in out
    assert (
        f"so101-judge --dataset.root={foreign} --store_path={tmp_path / 's'} --dry_run=true"
        " --dataset.views=overhead:front" in out
    )
    assert f"--store_path={tmp_path / 's'} --scorer=heuristic" in out  # the dry run dropped: it plans pictures


def test_the_review_page_shows_the_traces_without_videos(without_videos, tmp_path):
    with serving(without_videos, tmp_path / "store.sqlite", views={"overhead": "top"}) as server:
        client = httpx.Client(base_url=server.url, timeout=60)
        listing = client.get("/").text
        page = client.get("/episodes/1").text
        timeline = client.get("/episodes/1/timeline").json()
    assert "2 video files of the dataset are not on disk" in listing
    assert 'href="/episodes/1"' in listing
    assert "<video" not in page
    assert 'id="traces"' in page
    data = json.loads(page.split('id="episode-data">', 1)[1].split("</script>", 1)[0])
    assert data["length"] == FRAMES
    assert timeline["names"] == [
        "shoulder_pan.pos",
        "shoulder_lift.pos",
        "elbow_flex.pos",
        "wrist_flex.pos",
        "wrist_roll.pos",
        "gripper.pos",
    ]
