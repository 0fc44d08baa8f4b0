"""so101-edit end to end on a fresh virtual-rig recording: drop, trim, filter, split, merge, refusals.

The recording (tests/conftest.py's, five episodes) is copied first; each edit writes a new dataset
through LeRobot's tools or writer, which LeRobot then loads, decodes and trains on, with our
sidecars carried along and checked against the episodes they now sit beside.
"""

import json
import shutil
from pathlib import Path

import av
import numpy as np
import pytest

from teleop.commands.edit import main
from teleop.dataset.sidecar import check_all, read_quality, read_timing, recorded_states
from tests.support.commands import run
from tests.support.record_runs import REPO
from tests.support.tiny_training import train_tiny_act
from tests.teleop.dataset.helpers import snapshot

pytestmark = pytest.mark.slow
OUT_REPO = "test/fold_edited"


@pytest.fixture(scope="module")
def source(fresh_recording: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("edit") / "fold"
    shutil.copytree(fresh_recording, root)
    return root


def edit(source: Path, *options: str) -> object:
    return run("so101-edit", f"--dataset.root={source}", f"--dataset.repo_id={REPO}", *options, timeout_s=300)


def lengths(root: Path) -> list[int]:
    from lerobot.datasets.dataset_metadata import LeRobotDatasetMetadata

    meta = LeRobotDatasetMetadata("any/id", root=root)
    return [int(meta.episodes[i]["length"]) for i in range(meta.total_episodes)]


def video_frames(root: Path) -> dict[str, int]:
    """Frames in all of each camera's video files, from the decoded streams."""
    counts: dict[str, int] = {}
    for path in sorted(root.glob("videos/*/*/*.mp4")):
        with av.open(str(path)) as container:
            counts[path.parts[-3]] = counts.get(path.parts[-3], 0) + sum(1 for _ in container.decode(video=0))
    return counts


def test_drop_two_and_trim_one_writes_a_dataset_lerobot_loads_decodes_and_trains_on(source: Path, tmp_path: Path):
    before = snapshot(source)
    original = lengths(source)
    names, states = recorded_states(source)
    out = tmp_path / "curated"
    trim = (10, original[2] - 5)
    result = edit(
        source,
        "--drop=1,3",
        f"--trim=2:{trim[0]}:{trim[1]}",
        f"--new_dataset.root={out}",
        f"--new_dataset.repo_id={OUT_REPO}",
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "3 of 5 episodes kept" in result.stdout
    assert "renumbered: 2->1, 4->2" in result.stdout
    assert "sidecars carried for 3 episode(s)" in result.stdout
    # LeRobot loads it with the kept episodes' lengths; every camera's video holds exactly those frames.
    kept = [original[0], trim[1] - trim[0], original[4]]
    assert lengths(out) == kept
    assert set(video_frames(out).values()) == {sum(kept)}
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    dataset = LeRobotDataset(OUT_REPO, root=out, video_backend="pyav")
    assert dataset.num_frames == sum(kept)
    last = dataset[sum(kept) - 1]
    assert tuple(last["observation.images.overhead"].shape) == (3, 96, 128)
    # The states are the source's, frame for frame: episode 2 from frame 10, episode 4 whole.
    new_names, new_states = recorded_states(out)
    assert new_names == names
    np.testing.assert_array_equal(new_states[1], states[2][trim[0] : trim[1]])
    np.testing.assert_array_equal(new_states[2], states[4])
    # Our sidecars belong to the episodes they sit beside, cut and renumbered.
    assert [c.status for c in check_all(out)] == ["ok"] * 3
    card = read_quality(out, 1)
    assert (card["episode"], card["frames"]) == (1, kept[1])
    assert card["trimmed_from"] == {"frames": original[2], "start": trim[0], "stop": trim[1]}
    assert read_timing(out, 1)["frame_index"].tolist() == list(range(kept[1]))
    # so101-record can resume it: journaled as committed, every file listed.
    journal = json.loads((out / "meta" / "so101" / "journal.json").read_text())
    assert (journal["state"], journal["episodes"]) == ("committed", 3)
    assert not (tmp_path / "curated.partial").exists()
    train_tiny_act(out, OUT_REPO)
    assert snapshot(source) == before  # the source, byte for byte


def test_whole_episode_drops_copy_through_lerobots_tools_without_re_encoding(source: Path, tmp_path: Path):
    out = tmp_path / "dropped"
    result = edit(source, "--drop=0", f"--new_dataset.root={out}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "re-encoded" not in result.stdout
    assert lengths(out) == lengths(source)[1:]
    assert [c.status for c in check_all(out)] == ["ok"] * 4
    card = read_quality(out, 0)
    assert card["episode"] == 0
    assert "trimmed_from" not in card


def test_a_filter_on_the_cards_keeps_what_passes_and_a_dry_run_writes_nothing(source: Path, tmp_path: Path):
    longest = max(lengths(source))
    out = tmp_path / "filtered"
    result = edit(
        source, f"--filter=frames >= {longest} and verdict == keep", f"--new_dataset.root={out}", "--dry_run=true"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    kept = sum(1 for n in lengths(source) if n >= longest)
    assert f"{kept} of 5 episodes kept" in result.stdout
    assert "dry run: nothing written" in result.stdout
    assert not out.exists()


def test_split_then_merge_gives_back_every_episode_with_its_sidecar(source: Path, tmp_path: Path):
    splits = tmp_path / "splits"
    result = edit(source, "--split=train:0.6,val:0.4", f"--new_dataset.root={splits}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert lengths(splits / "train") == lengths(source)[:3]
    assert lengths(splits / "val") == lengths(source)[3:]
    merged = tmp_path / "merged"
    result = run(
        "so101-edit",
        f"--dataset.root={splits / 'train'}",
        f"--merge={splits / 'val'}",
        f"--new_dataset.root={merged}",
        timeout_s=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert lengths(merged) == lengths(source)
    assert [c.status for c in check_all(merged)] == ["ok"] * 5
    _, states = recorded_states(source)
    _, again = recorded_states(merged)
    for index in range(5):
        np.testing.assert_array_equal(again[index], states[index])


@pytest.mark.parametrize(
    ("options", "words"),
    [
        (["--drop=0-4"], "every episode is dropped; drop fewer with --drop"),
        (["--trim=2:0:999"], "give START:STOP with 0 <= START < STOP"),
        (["--drop=9"], "the dataset has episodes 0-4"),
        (["--filter=idle < 3"], "no field 'idle'"),
        (["--drop=1", "--split=a:0.5,b:0.5"], "are separate edits"),
    ],
)
def test_a_refused_edit_is_one_line_and_leaves_nothing(source: Path, tmp_path: Path, options, words, capsys):
    out = tmp_path / "never"
    code = main([f"--dataset.root={source}", *options, f"--new_dataset.root={out}"])  # in this process: no start-up
    assert code in (1, 2)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert words in lines[0]
    assert not out.exists()
    assert not (tmp_path / "never.partial").exists()


def test_an_existing_output_folder_is_refused_with_a_free_name(source: Path, tmp_path: Path, capsys):
    out = tmp_path / "taken"
    out.mkdir()
    assert main([f"--dataset.root={source}", "--drop=0", f"--new_dataset.root={out}"]) == 1
    assert f"--new_dataset.root={tmp_path / 'taken-2'}" in capsys.readouterr().err
    assert list(out.iterdir()) == []


def test_sidecars_left_stale_by_lerobot_edit_dataset_are_named_and_not_carried(source: Path, tmp_path: Path):
    """LeRobot's tool drops episode 1 and leaves meta/so101/ behind; copied back, it describes other episodes."""
    from lerobot.datasets.dataset_tools import delete_episodes
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    edited = tmp_path / "lerobot_edited"
    delete_episodes(LeRobotDataset(REPO, root=source, video_backend="pyav"), [1], output_dir=edited, repo_id=REPO)
    shutil.copytree(source / "meta" / "so101", edited / "meta" / "so101")
    out = tmp_path / "out"
    result = edit(edited, "--drop=3", f"--new_dataset.root={out}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "sidecars carried for 1 episode(s)" in result.stdout  # episode 0 alone still has its own
    assert result.stdout.count("not carried (it describes another episode)") == 2
    assert [c.status for c in check_all(out)] == ["ok", "missing", "missing"]
