"""What the product reads of LeRobot's dataset format, and the hub, outside the writer (lerobot 0.6.1).

LeRobot is imported by a few adapter modules only (tests/test_layers.py lists them): the writer
(`lerobot_adapter.py`), and this module for everything else about a dataset folder:

    FORMAT_VERSION                      # "v3.0": the codebase_version this LeRobot writes and reads
    DEFAULT_FEATURES                    # the index columns LeRobot adds to every dataset
    read_metadata(root, repo_id)        # LeRobot's metadata reader (info.json, episode index, stats)
    download(repo_id, root)             # a dataset from the hub into `root` (online only)
    push_to_hub(repo_id, root)          # upload a finished dataset (HubUploadError says how to retry)
    hub_offline()                       # whether the hub is switched off (HF_HUB_OFFLINE=1)

The heavy dataset classes are imported when called, so reading a command's options stays quick.
"""

from pathlib import Path
from typing import Any

from lerobot.utils.constants import DEFAULT_FEATURES

from teleop.dataset.errors import HubUploadError
from teleop.dataset.format_check import FORMAT_VERSION

__all__ = ["DEFAULT_FEATURES", "FORMAT_VERSION", "download", "hub_offline", "push_to_hub", "read_metadata"]


def hub_offline() -> bool:
    """Whether Hugging Face hub access is switched off (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE)."""
    from huggingface_hub import is_offline_mode

    return bool(is_offline_mode())


def read_metadata(root: Path, repo_id: str) -> Any:
    """LeRobot's `LeRobotDatasetMetadata` of the dataset in `root` (whatever it raises, raised)."""
    from lerobot.datasets.dataset_metadata import LeRobotDatasetMetadata

    return LeRobotDatasetMetadata(repo_id=repo_id, root=root)


def download(repo_id: str, root: Path) -> None:
    """Download dataset `repo_id` from the hub into `root` (whatever LeRobot raises, raised)."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    LeRobotDataset(repo_id, root=root)


def push_to_hub(repo_id: str, root: Path) -> None:
    """Upload the finished dataset in `root` to the hub as `repo_id` (needs a login and a network).

    Raises:
        HubUploadError: the hub is switched off here, or the upload failed; the dataset is untouched.
    """
    retry = f"hf upload {repo_id} {root} --repo-type=dataset"
    if hub_offline():
        raise HubUploadError(
            f"not uploaded to the hub as {repo_id}: the hub is switched off here (HF_HUB_OFFLINE=1); the dataset"
            f" is saved in {root}. Next: once online, run: {retry}"
        )
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    try:
        LeRobotDataset(repo_id, root=root).push_to_hub()
    except Exception as e:  # network, authentication, permissions: the same next step
        raise HubUploadError(
            f"not uploaded to the hub as {repo_id}: {type(e).__name__}: {str(e)[:300]}; the dataset is saved in"
            f" {root}. Next: log in (hf auth login) and check the network, then run: {retry}"
        ) from e
