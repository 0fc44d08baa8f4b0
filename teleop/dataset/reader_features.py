"""What a dataset's meta/info.json declares, checked: its joint columns' names and its cameras' frame size.

    declared_features(root, info) -> DeclaredFeatures
        action_names, state_names   one name per column (None: not declared), e.g. left_shoulder_pan.pos
        cameras                     video camera name -> (height, width) px, in feature order

The reader (reader.py) checks these before it reads any data, so a shape edited by hand is named
with the fix instead of surfacing as a reshape error later. Standard library only (a leaf of the
dataset package, tests/support/layering.py).
"""

from dataclasses import dataclass
from pathlib import Path

from teleop.dataset.errors import UnreadableDatasetError
from teleop.dataset.vocabulary import ACTION_KEY, IMAGE_PREFIX, STATE_KEY

RGB_CHANNELS = 3


@dataclass(frozen=True)
class DeclaredFeatures:
    """The features of info.json a reader of joints and videos needs."""

    action_names: tuple[str, ...] | None  # names of the action columns; None: no action feature
    state_names: tuple[str, ...] | None  # names of the state columns; None: no state feature
    cameras: dict[str, tuple[int, int]]  # video camera name -> (height, width) px, in feature order


def declared_features(root: Path, info: dict) -> DeclaredFeatures:
    """The joint names and camera shapes `info` (meta/info.json of `root`) declares.

    Raises:
        UnreadableDatasetError: a joint feature that is not one axis of named values, or a camera
            whose shape is not [height, width, 3].
    """
    features = info.get("features") or {}
    return DeclaredFeatures(
        action_names=_names(root, ACTION_KEY, features[ACTION_KEY]) if ACTION_KEY in features else None,
        state_names=_names(root, STATE_KEY, features[STATE_KEY]) if STATE_KEY in features else None,
        cameras={
            key.removeprefix(IMAGE_PREFIX): _image_shape(root, key, feature)
            for key, feature in features.items()
            if key.startswith(IMAGE_PREFIX) and feature.get("dtype") == "video"
        },
    )


def _names(root: Path, key: str, feature: dict) -> tuple[str, ...]:
    shape = tuple(feature.get("shape") or ())
    names = feature.get("names")
    if isinstance(names, dict):  # older exports keep names under one axis key
        names = next(iter(names.values()), None)
    if len(shape) != 1 or shape[0] < 1:
        raise UnreadableDatasetError(
            f"{root}: feature '{key}' has shape {list(shape)}; expected one axis of joint values, e.g. [12]."
            " Next: this is not a joint-space dataset; record one with so101-record"
        )
    if names is None:
        return tuple(f"{key}[{i}]" for i in range(shape[0]))
    names = tuple(str(n) for n in names)
    if len(names) != shape[0]:
        raise UnreadableDatasetError(
            f"{root}: feature '{key}' has shape {list(shape)} but {len(names)} names ({', '.join(names)})."
            " Next: fix meta/info.json (the shape must count the names)"
        )
    return names


def _image_shape(root: Path, key: str, feature: dict) -> tuple[int, int]:
    shape = tuple(feature.get("shape") or ())
    names = feature.get("names") or ["height", "width", "channels"]
    if len(shape) != 3:
        raise UnreadableDatasetError(
            f"{root}: camera feature '{key}' has shape {list(shape)}; expected [height, width, 3]."
            " Next: fix meta/info.json, or re-record the dataset"
        )
    axes = dict(zip(names, shape, strict=False))
    height, width = axes.get("height", shape[0]), axes.get("width", shape[1])
    channels = axes.get("channels", shape[2])
    if channels != RGB_CHANNELS:
        raise UnreadableDatasetError(
            f"{root}: camera feature '{key}' has shape {list(shape)} ({channels} channels); expected 3 (RGB)."
            " Next: fix meta/info.json, or re-record the dataset"
        )
    return int(height), int(width)
