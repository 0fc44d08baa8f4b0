"""Can LeRobot 0.6.1 open this dataset folder? One line naming the file that stops it, and the next step.

LeRobot's own errors for a dataset it cannot open run to many lines and name no file ("Contact the
maintainer on Discord" for an older format, an "offline mode is enabled" hub error for a missing
meta/tasks.parquet, "An error occurred while generating the dataset" for a corrupt parquet file).
Every command that reads a dataset (judge, review, report, replay) asks here first, reading only:

    meta/info.json            exists and is a JSON object with features
    codebase_version          v3.0; v2.1 and v2.0 get LeRobot's own conversions as the next step
    meta/tasks.parquet        exists and reads
    meta/episodes/, data/     at least one parquet file each, and each one's footer reads
    videos/ (when needed)     no video file of 0 bytes

This module and next_steps.py are the layout every reader of a dataset speaks, evaluation/ included:
they import nothing of the product but each other.
"""

import json
import shlex
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from teleop.dataset.next_steps import CONVERTIBLE_VERSION, convert_command

# LeRobot 0.6.1's `CODEBASE_VERSION`, written down here so a check of a dataset's version needs no
# import of LeRobot; tests/teleop/dataset/test_resume_refusals.py holds the two equal.
FORMAT_VERSION = "v3.0"
V20 = "v2.0"
# LeRobot converts v2.0 to v2.1 only in its 0.3 releases, and only a dataset on the hub.
V20_CONVERTER = "lerobot.datasets.v21.convert_dataset_v20_to_v21"
_RESTORE = "Next: restore it from a copy of the dataset, or download the dataset again"


def saved_episodes(root: Path) -> int:
    """The episodes info.json counts: what LeRobot loads from the folder now (0 without a readable one).

    Light enough to poll while a recording adds episodes (so101-studio's counter); it checks nothing else.
    """
    try:
        info = json.loads((Path(root) / "meta" / "info.json").read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return 0
    count = info.get("total_episodes", 0) if isinstance(info, dict) else 0
    return count if isinstance(count, int) and count >= 0 else 0


def format_problem(root: Path, repo_id: str | None = None, *, videos: bool = True) -> str | None:
    """Why LeRobot 0.6.1 cannot open the dataset at `root`, in one line with the next step; None if it can.

    `videos=False`: the caller reads no video, so an empty video file is no problem.
    """
    root = Path(root)
    info_path = root / "meta" / "info.json"
    if not info_path.is_file():
        return f"{root} is not a LeRobot dataset (no meta/info.json). Next: give the folder that holds meta/"
    try:
        info = json.loads(info_path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        return f"{info_path} cannot be read ({e}). {_RESTORE}"
    if not isinstance(info, dict) or not isinstance(info.get("features"), dict):
        return f"{info_path} holds no features object: it is not LeRobot's info.json. {_RESTORE}"
    version = info.get("codebase_version")
    if version != FORMAT_VERSION:
        return _older_format(root, repo_id, version)
    tasks = root / "meta" / "tasks.parquet"
    if not tasks.is_file():
        return f"{tasks} is missing, and LeRobot cannot open a dataset without its task list. {_RESTORE}"
    if (problem := _parquet_problem(tasks)) is not None:
        return problem
    for folder in ("meta/episodes", "data"):
        files = sorted((root / folder).glob("*/*.parquet"))
        if not files:
            return f"{root / folder} holds no parquet files: the dataset has no saved episodes. {_RESTORE}"
        for path in files:
            if (problem := _parquet_problem(path)) is not None:
                return problem
    if videos:
        for path in sorted((root / "videos").glob("*/*/*.mp4")):
            if path.stat().st_size == 0:
                return f"{path} is empty (0 bytes): the copy or download was cut short. {_RESTORE}"
    return None


def _parquet_problem(path: Path) -> str | None:
    try:
        pq.read_metadata(path)
    except (OSError, pa.ArrowException) as e:
        reason = (str(e).splitlines() or [type(e).__name__])[0]
        return f"{path} cannot be read as parquet ({reason}): it is corrupt. {_RESTORE}"
    return None


def _older_format(root: Path, repo_id: str | None, version: object) -> str:
    shown = version if isinstance(version, str) else repr(version)
    found = f"{root} is a LeRobot dataset in format {shown}; LeRobot 0.6.1 reads {FORMAT_VERSION}."
    if version == CONVERTIBLE_VERSION:
        return f"{found} Next: convert it with LeRobot's converter: {convert_command(repo_id, root)}"
    if version == V20:
        repo = shlex.quote(repo_id) if repo_id else "<user>/<name>"
        return (
            f"{found} LeRobot converts v2.0 only on the hub, with its 0.3 releases. Next: in a separate environment, "
            f"python -m venv lerobot033 && lerobot033/bin/pip install 'lerobot==0.3.3' && "
            f"lerobot033/bin/python -m {V20_CONVERTER} --repo-id={repo}; then download it again and convert it to "
            f"v3.0 with {convert_command(repo_id, root)}"
        )
    return f"{found} Next: open it with the LeRobot version that wrote it, or ask its author for a v3.0 copy"
