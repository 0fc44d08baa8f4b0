"""Can this run append to that dataset? Compare the spec with the dataset's info.json, change nothing.

Checked: fps, robot type, every feature (keys, dtype, shape, names: so camera names and sizes and
the joint names), and the video codec once a first episode has recorded it. Each difference is
listed in words, e.g. "fps: the dataset has 30, this run asks for 15".
"""

import json
from pathlib import Path

from teleop.dataset.errors import IncompatibleDatasetError, NotADatasetError
from teleop.dataset.features import CODEC_NAMES, dataset_features
from teleop.dataset.lerobot_format import DEFAULT_FEATURES
from teleop.dataset.next_steps import NEW_FOLDER
from teleop.dataset.spec import WriterSpec
from teleop.dataset.vocabulary import IMAGE_PREFIX


def load_info(info_path: Path, root: Path) -> dict:
    """Parse an info.json; a missing or unreadable one means the root holds no usable dataset."""
    try:
        return json.loads(info_path.read_text())
    except (OSError, ValueError) as error:
        raise NotADatasetError(
            f"{root} is not a LeRobot dataset ({info_path.name}: {error}); nothing was changed. "
            f"Next: {NEW_FOLDER}, or restore {info_path} from a copy"
        ) from error


def differences(spec: WriterSpec, info: dict) -> list[str]:
    """Every way the dataset described by `info` differs from what `spec` would write."""
    found = []
    if info.get("fps") != spec.fps:
        found.append(f"fps: the dataset has {info.get('fps')}, this run asks for {spec.fps}")
    if info.get("robot_type") != spec.robot_type:
        found.append(f"robot type: the dataset has {info.get('robot_type')!r}, this run is {spec.robot_type!r}")
    theirs = info.get("features", {})
    ours = {**dataset_features(spec.cameras, intervention=spec.intervention), **DEFAULT_FEATURES}
    for key in ours.keys() - theirs.keys():
        found.append(f"{_name(key)}: not in the dataset, but this run records it")
    for key in theirs.keys() - ours.keys():
        found.append(f"{_name(key)}: in the dataset, but this run does not record it")
    for key in sorted(ours.keys() & theirs.keys()):
        for field in ("dtype", "shape", "names"):
            mine, recorded = _plain(ours[key].get(field)), _plain(theirs[key].get(field))
            if mine != recorded:
                found.append(f"{_name(key)} {field}: the dataset has {recorded}, this run has {mine}")
    codecs = {(ft.get("info") or {}).get("video.codec") for ft in theirs.values() if ft.get("dtype") == "video"}
    codecs.discard(None)  # recorded with the first episode; an empty dataset has none yet
    if codecs and codecs != {CODEC_NAMES[spec.vcodec]}:
        found.append(f"video codec: the dataset has {', '.join(sorted(codecs))}, this run asks for {spec.vcodec}")
    return sorted(found)


def check_compatible(spec: WriterSpec, info: dict) -> None:
    """Raise IncompatibleDatasetError listing every difference; return if there are none."""
    found = differences(spec, info)
    if found:
        raise IncompatibleDatasetError(str(spec.root), tuple(found))


def _name(key: str) -> str:
    return f"camera {key.removeprefix(IMAGE_PREFIX)!r}" if key.startswith(IMAGE_PREFIX) else f"feature {key!r}"


def _plain(value: object) -> object:
    # info.json stores shapes as lists; our features use tuples.
    return list(value) if isinstance(value, tuple | list) else value
