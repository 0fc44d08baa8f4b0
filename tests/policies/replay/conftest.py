"""Fixtures of the replay tests: one virtual-rig recording per session, and ways to damage copies of it.

The recording is made by so101-record itself on the virtual rig (two 2-second episodes, three
96x128 cameras, h264), exactly as a user would make one, with the looped cloth-fold demonstration
on the leaders: its 2 seconds hold some joints still, which the tracking test needs (the first 2
seconds of the fold task move every joint but the wrist rolls, whose tremor exceeds the test's
2-step stillness now and then; CI saw no still window at all). Tests that change a dataset work on a
copy (`dataset_copy`); `tests.support.dataset_files` edits a copy's info.json or data the way a
broken or foreign dataset would look.
"""

import shutil
from pathlib import Path

import pytest

from tests.support.commands import run
from tests.support.recordings import Recording
from tests.support.rig_files import rig_yaml


@pytest.fixture(scope="session")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    """Two episodes of the scripted cloth fold, recorded by so101-record on the virtual rig."""
    folder = tmp_path_factory.mktemp("replay_recording")
    rig = rig_yaml(folder)
    root = folder / "dataset"
    result = run(
        "so101-record",
        f"--config_path={rig}",
        "--dataset.repo_id=test/replay",
        f"--dataset.root={root}",
        "--dataset.vcodec=h264",
        "--virtual_operator=cloth_fold",
        "--session.episode_s=2",
        "--session.reset_s=0.5",
        "--session.num_episodes=2",
        "--gates.min_fps=20",
        "--gates.max_period_error_p99_ms=200",
        "--gates.max_skew_p99_ms=200",
        timeout_s=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return Recording(root=root, rig_file=rig, runtime_dir=folder / "run")


@pytest.fixture
def dataset_copy(tmp_path: Path, recording: Recording) -> Path:
    """A private copy of the recording that a test may damage."""
    root = tmp_path / "dataset"
    shutil.copytree(recording.root, root)
    return root
