"""Where each episode of a curated dataset came from: `meta/so101/lineage.json`, written by so101-edit.

    {"format": 1, "episodes": [{"episode_index": 0, "source_root": "/data/fold", "source_episode": 3,
                                "start": 0, "stop": 412, "source_frames": 412}, ...]}

A leaf of the dataset layout (tests/test_layers.py, DATASET_LAYOUT): so101-edit writes it, and the
evaluation layer reads it to carry the judge's and people's scores of whole episodes from the source
dataset's store to the new one (evaluation/carry.py checks the content fingerprints before it does).
"""

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from teleop.dataset.sidecar import SO101_DIR

LINEAGE_FILE = f"{SO101_DIR}/lineage.json"
FORMAT = 1


@dataclass(frozen=True)
class Origin:
    """One episode of a curated dataset, and the frames of a source episode it holds."""

    episode_index: int  # in the curated dataset
    source_root: str  # the source dataset's folder, absolute
    source_episode: int  # its index there
    start: int  # first source frame kept
    stop: int  # first source frame not kept
    source_frames: int  # the source episode's length

    @property
    def whole(self) -> bool:
        """Whether the episode holds every frame of its source (its scores may follow it)."""
        return self.start == 0 and self.stop == self.source_frames


class LineageError(ValueError):
    """The lineage file is not one so101-edit wrote (names the file)."""


def write_lineage(root: Path, origins: Sequence[Origin]) -> Path:
    """Write the lineage of the dataset at `root`; returns the file."""
    path = Path(root) / LINEAGE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"format": FORMAT, "episodes": [dataclasses.asdict(o) for o in origins]}
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def read_lineage(root: Path) -> tuple[Origin, ...]:
    """The lineage of the dataset at `root`; () when it was not written by so101-edit.

    Raises:
        LineageError: the file exists but does not read as a lineage.
    """
    path = Path(root) / LINEAGE_FILE
    if not path.is_file():
        return ()
    try:
        doc = json.loads(path.read_text())
        if doc.get("format") != FORMAT:
            raise LineageError(f"{path}: format {doc.get('format')!r}, this version reads {FORMAT}")
        return tuple(Origin(**entry) for entry in doc["episodes"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        if isinstance(e, LineageError):
            raise
        raise LineageError(f"{path} does not read as so101-edit's lineage ({e}); scores were not carried") from e
