"""What the product reads of LeRobot's dataset format, and the hub, outside the writer (lerobot 0.6.1).

LeRobot is imported by a few adapter modules only (tests/test_layers.py lists them): the writer
(`lerobot_adapter.py`), and this module for everything else about a dataset folder:

    FORMAT_VERSION                      # "v3.0": the codebase_version this LeRobot writes and reads
    DEFAULT_FEATURES                    # the index columns LeRobot adds to every dataset
    read_metadata(root, repo_id)        # LeRobot's metadata reader (info.json, episode index, stats)
    download(repo_id, root)             # a dataset from the hub into `root` (online only)
    push_to_hub(repo_id, root)          # upload a finished dataset

The heavy dataset classes are imported when called, so reading a command's options stays quick.
"""

from pathlib import Path
from typing import Any

from lerobot.utils.constants import DEFAULT_FEATURES

# LeRobot 0.6.1's `CODEBASE_VERSION`, written down here so a check of a dataset's version needs no
# import of the dataset classes; tests/teleop/dataset/test_resume_refusals.py holds the two equal.
FORMAT_VERSION = "v3.0"

__all__ = ["DEFAULT_FEATURES", "FORMAT_VERSION", "download", "push_to_hub", "read_metadata"]


def read_metadata(root: Path, repo_id: str) -> Any:
    """LeRobot's `LeRobotDatasetMetadata` of the dataset in `root` (whatever it raises, raised)."""
    from lerobot.datasets.dataset_metadata import LeRobotDatasetMetadata

    return LeRobotDatasetMetadata(repo_id=repo_id, root=root)


def download(repo_id: str, root: Path) -> None:
    """Download dataset `repo_id` from the hub into `root` (whatever LeRobot raises, raised)."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    LeRobotDataset(repo_id, root=root)


def push_to_hub(repo_id: str, root: Path) -> None:
    """Upload the finished dataset in `root` to the hub as `repo_id` (needs a login and a network)."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    LeRobotDataset(repo_id, root=root).push_to_hub()
