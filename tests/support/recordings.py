"""The recording the replay tests share: where it lies, and how long its episodes are."""

from dataclasses import dataclass
from pathlib import Path

EPISODE_FRAMES = 60  # 2 s at 30 fps


@dataclass(frozen=True)
class Recording:
    """A dataset recorded on the virtual rig, and the rig file it was recorded with."""

    root: Path  # the dataset folder (never modified)
    rig_file: Path  # the virtual rig's YAML (calibration dir, runtime dir)
    runtime_dir: Path  # where that rig's pty links and control socket live
