"""so101-record's end-to-end runs: the recording tests' rig file, command-line options and dataset reads.

rig = rig_file(tmp_path)                                  # the virtual rig (rig_files.rig_yaml)
run(script("so101-record"), *record_args(tmp_path, rig, "--session.num_episodes=2"))
dataset = load(tmp_path / "dataset")                      # LeRobotDataset, read back with pyav
"""

from pathlib import Path

from tests.support.rig_files import rig_yaml

REPO = "test/fold"


def rig_file(tmp_path: Path, *, width: int = 128, height: int = 96, **camera_faults: object) -> Path:
    """The recording tests' virtual rig (tests/support/rig_files.py); `camera_faults` go to the overhead camera."""
    return rig_yaml(tmp_path, rig_id="rec_e2e", width=width, height=height, **camera_faults)


def record_args(tmp_path: Path, rig: Path, *extra: str) -> list[str]:
    """so101-record's options for short episodes into tmp_path/dataset, with gates a busy machine meets."""
    return [
        f"--config_path={rig}",
        f"--dataset.repo_id={REPO}",
        f"--dataset.root={tmp_path / 'dataset'}",
        "--dataset.vcodec=h264",
        "--session.episode_s=2",
        "--session.reset_s=0.5",
        "--gates.min_fps=20",
        "--gates.max_period_error_p99_ms=200",
        "--gates.max_skew_p99_ms=200",
        *extra,
    ]


def load(root: Path):  # a LeRobotDataset: imported only when called
    """The dataset in `root`, loaded by LeRobot as lerobot-train would (videos decoded with pyav)."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    return LeRobotDataset(REPO, root=root, video_backend="pyav")


def saved_episodes(root: Path) -> int:
    """Episodes whose save completed: each has its quality card in meta/so101/."""
    folder = root / "meta" / "so101" / "episodes"
    return len(list(folder.glob("episode-*/quality.json"))) if folder.exists() else 0
