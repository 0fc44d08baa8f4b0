"""Does a checkpoint fit the rig? Compared from config.json and processor files, before any weights load.

    PolicyFeatures (what the checkpoint reads and writes)  ─┐
    RigSpec (camera names and sizes, 12 bimanual joints)   ─┼─ check_contract ─> Contract | ContractError
    rename map (rig camera name -> checkpoint camera)      ─┘                    (every difference listed)

Cameras: each camera the checkpoint expects must come from exactly one rig camera, by equal name
(`overhead` feeds `observation.images.overhead`) or through the rename map, e.g.
`{"overhead": "top"}` (like LeRobot's `rename_map`). Rig cameras the checkpoint does not use are
left out, with a note.

Image sizes, per policy type:
- ACT feeds frames to its ResNet as they are: any size other than the one it was trained on is
  an error (the network would run, on inputs it never saw).
- SmolVLA resizes every frame with padding to a fixed square (`resize_imgs_with_padding`, 512x512
  for real checkpoints). A frame with the trained aspect ratio (e.g. 480x640 for a 240x320
  checkpoint) ends up exactly as in training and is accepted with a note; another aspect ratio
  would be padded differently, and is an error.

Joints: the state and action sizes must be the rig's 12; when the checkpoint records joint names
(through the training dataset named in its train_config.json), they must be the rig's names, in
any order (the predictor reorders). Without names, the order is assumed to be `BIMANUAL_KEYS`,
which is what so101-record writes. When the normalizer's statistics show that the training data's
left and right state blocks were swapped (`policies.state_sides`), that is a difference too.
"""

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from policies.errors import ContractError
from policies.state_sides import JointStatistics, swapped_state_problem
from robot.joints import BIMANUAL_KEYS
from teleop.dataset.vocabulary import ACTION_KEY, IMAGE_PREFIX, STATE_KEY

_EMPTY_CAMERA = f"{IMAGE_PREFIX}empty_camera_"  # SmolVLA's padding cameras: filled in by the model
_RESIZING_TYPES = frozenset({"smolvla"})  # policy types that resize images with padding internally

Size = tuple[int, int]  # (height, width) in pixels


@dataclass(frozen=True)
class PolicyFeatures:
    """What a checkpoint consumes and produces, read from its config and processor files."""

    policy_type: str  # "act" | "smolvla"
    cameras: Mapping[str, Size]  # observation key the preprocessor takes (e.g. observation.images.top) -> (h, w)
    state_size: int | None  # length of observation.state; None when the policy takes no state
    state_names: tuple[str, ...] | None  # joint names of the state, when the checkpoint records them
    action_size: int  # length of an action
    action_names: tuple[str, ...] | None  # joint names of an action, when recorded
    other_inputs: tuple[str, ...]  # inputs a rig cannot provide (e.g. observation.environment_state)
    image_resize: Size | None  # SmolVLA: the (h, w) frames are resized and padded to; None = used as is
    chunk_size: int  # actions predicted per forward pass
    n_action_steps: int  # actions of a chunk LeRobot executes before predicting again
    rtc_enabled: bool  # SmolVLA with real-time chunking enabled in its config
    statistics: JointStatistics | None = None  # the training data's per-joint state and action statistics


@dataclass(frozen=True)
class RigSpec:
    """What the rig provides to a policy and accepts from it."""

    cameras: Mapping[str, Size]  # rig camera name -> (height, width) in pixels
    joint_names: tuple[str, ...] = BIMANUAL_KEYS  # state and action order

    @classmethod
    def from_rig_config(cls, config: Any) -> "RigSpec":
        """From a `robot.config.RigConfig` (its cameras' names, heights and widths)."""
        return cls(cameras={camera.name: (camera.height, camera.width) for camera in config.cameras})


@dataclass(frozen=True)
class Contract:
    """How rig data maps onto the checkpoint's inputs and outputs (the result of a passed check)."""

    camera_keys: Mapping[str, str]  # rig camera name -> observation key fed to the preprocessor (used ones only)
    state_index: tuple[int, ...]  # checkpoint state element i = rig state[state_index[i]]
    action_index: tuple[int, ...]  # rig joint j (BIMANUAL_KEYS order) = checkpoint action[action_index[j]]
    notes: tuple[str, ...]  # accepted differences worth telling the user (unused cameras, resizing, ...)


def features_from_config(
    config: Any,
    preprocessor_spec: Mapping[str, Any],
    dataset_names: Mapping[str, Any] | None = None,
    statistics: JointStatistics | None = None,
) -> PolicyFeatures:
    """The features of a LeRobot policy config (ACTConfig or SmolVLAConfig), without its weights.

    Camera keys are given as the checkpoint's preprocessor receives them: when it was saved with a
    rename map (`rename_observations_processor`), the key before renaming.
    """
    saved_renames = {}
    for step in preprocessor_spec.get("steps", []):
        if isinstance(step, dict) and step.get("registry_name") == "rename_observations_processor":
            saved_renames = dict((step.get("config") or {}).get("rename_map") or {})
    received_as = {target: source for source, target in saved_renames.items()}
    cameras: dict[str, Size] = {}
    other: list[str] = []
    state_size = None
    for key, feature in (config.input_features or {}).items():
        kind = getattr(feature.type, "value", str(feature.type))
        if kind == "VISUAL":
            if not key.startswith(_EMPTY_CAMERA):
                cameras[received_as.get(key, key)] = (int(feature.shape[-2]), int(feature.shape[-1]))
        elif kind == "STATE" and key == STATE_KEY:
            state_size = int(feature.shape[0])
        else:
            other.append(key)
    action = (config.output_features or {}).get(ACTION_KEY)
    if action is None:
        raise ContractError(f"the checkpoint declares no '{ACTION_KEY}' output; it cannot drive the arms")
    action_size = int(action.shape[0])
    resize = getattr(config, "resize_imgs_with_padding", None) if config.type in _RESIZING_TYPES else None
    rtc = getattr(config, "rtc_config", None)
    return PolicyFeatures(
        policy_type=config.type,
        cameras=cameras,
        state_size=state_size,
        state_names=_names(dataset_names, STATE_KEY, state_size),
        action_size=action_size,
        action_names=_names(dataset_names, ACTION_KEY, action_size),
        other_inputs=tuple(other),
        # SmolVLA stores the target as (width, height); equal for the square sizes in use
        image_resize=(int(resize[1]), int(resize[0])) if resize else None,
        chunk_size=int(config.chunk_size),
        n_action_steps=int(config.n_action_steps),
        rtc_enabled=bool(rtc is not None and rtc.enabled),
        statistics=statistics,
    )


def parse_rename_map(value: str | Mapping[str, str] | None) -> dict[str, str]:
    """A rename map from the command line (JSON or YAML: `{"overhead": "top"}`) or a mapping.

    Keys are rig camera names, values checkpoint camera names; either may carry the
    `observation.images.` prefix. Returns rig camera name -> checkpoint observation key.

    Raises:
        ContractError: the text is not a mapping of names to names.
    """
    if value is None or value == "":
        return {}
    mapping = value
    if isinstance(value, str):
        try:
            mapping = yaml.safe_load(value)
        except yaml.YAMLError as error:
            raise ContractError(
                f'rename_map {value!r} is not a mapping; write it like \'{{"overhead": "top"}}\''
            ) from error
    if not isinstance(mapping, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()
    ):
        raise ContractError(
            f'rename_map {value!r} is not a mapping of camera names; write it like \'{{"overhead": "top"}}\''
        )
    return {
        k.removeprefix(IMAGE_PREFIX): v if v.startswith(IMAGE_PREFIX) else IMAGE_PREFIX + v for k, v in mapping.items()
    }


def check_contract(features: PolicyFeatures, rig: RigSpec, rename_map: Mapping[str, str] | None = None) -> Contract:
    """Compare a checkpoint with the rig; `rename_map` as returned by `parse_rename_map`.

    Raises:
        ContractError: listing every difference (cameras, image sizes, state, action, other inputs),
            with a suggested rename map when cameras only differ by name.
    """
    rename = dict(rename_map or {})
    problems: list[str] = []
    notes: list[str] = []
    camera_keys = _match_cameras(features, rig, rename, problems, notes)
    state_index = _match_joints(STATE_KEY, features.state_size, features.state_names, rig, problems)
    action_index = _match_joints(ACTION_KEY, features.action_size, features.action_names, rig, problems)
    if features.state_size is None:
        notes.append("the checkpoint takes no joint state")
    if features.action_names is None or features.state_names is None:
        notes.append("the checkpoint records no joint names; assuming the rig's order (left_shoulder_pan.pos ...)")
    problems.extend(
        f"the checkpoint expects input {key!r}, which the rig does not provide" for key in features.other_inputs
    )
    if state_index and action_index:  # unnamed columns are in the rig's order, as the predictor assumes
        names = (features.state_names or rig.joint_names, features.action_names or rig.joint_names)
        if (swapped := swapped_state_problem(features.statistics, *names)) is not None:
            problems.append(swapped)
    if problems:
        raise ContractError(
            f"the {features.policy_type} checkpoint does not fit this rig (checked before loading weights):\n  - "
            + "\n  - ".join(problems)
        )
    if features.action_names is not None:  # rig joint j <- checkpoint action element
        action_index = tuple(features.action_names.index(name) for name in rig.joint_names)
    return Contract(camera_keys, state_index, action_index, tuple(notes))


def _match_cameras(
    features: PolicyFeatures, rig: RigSpec, rename: dict[str, str], problems: list[str], notes: list[str]
) -> dict[str, str]:
    for name in rename:
        if name not in rig.cameras:
            problems.append(
                f"rename_map names rig camera {name!r}, but the rig's cameras are {_names_list(rig.cameras)}"
            )
    for name, key in rename.items():
        if key not in features.cameras:
            problems.append(f"rename_map maps {name!r} to {_short(key)!r}, which the checkpoint does not take")
    feeding: dict[str, list[str]] = {}
    for name in rig.cameras:
        feeding.setdefault(rename.get(name, IMAGE_PREFIX + name), []).append(name)
    camera_keys: dict[str, str] = {}
    missing = []
    for key, (height, width) in features.cameras.items():
        sources = feeding.get(key, [])
        if len(sources) > 1:
            problems.append(f"rig cameras {sources} all map to checkpoint camera {_short(key)!r}; map only one")
            continue
        if not sources:
            missing.append(key)
            continue
        name = sources[0]
        camera_keys[name] = key
        rig_height, rig_width = rig.cameras[name]
        if (rig_height, rig_width) == (height, width):
            continue
        where = (
            f"checkpoint expects camera {_short(key)!r} {height}x{width};"
            f" the rig's {name!r} gives {rig_height}x{rig_width}"
        )
        if features.image_resize is not None and rig_height * width == height * rig_width:
            notes.append(
                f"{where}: same aspect ratio, {features.policy_type} resizes it to {_size(features.image_resize)}"
            )
        elif features.image_resize is not None:
            problems.append(
                f"{where}: another aspect ratio, so {features.policy_type}'s resize to {_size(features.image_resize)}"
                " pads it differently than in training; set the camera to the trained size"
            )
        else:
            problems.append(
                f"{where}; {features.policy_type} uses frames as they are: set the camera to {height}x{width}"
            )
    unused = [name for name in rig.cameras if name not in camera_keys]
    for key in missing:
        height, width = features.cameras[key]
        problems.append(
            f"checkpoint expects camera {_short(key)!r} {height}x{width}; no rig camera feeds it"
            f" (the rig has {_describe(rig.cameras)})"
        )
    if missing and unused:
        suggestion = _suggest(missing, unused, features, rig)
        problems.append(f"if the cameras only differ by name, pass --policy.rename_map='{json.dumps(suggestion)}'")
    elif unused:
        notes.append(f"rig camera(s) {unused} are not used by the checkpoint")
    return camera_keys


def _match_joints(
    what: str, size: int | None, names: Sequence[str] | None, rig: RigSpec, problems: list[str]
) -> tuple[int, ...]:
    expected = len(rig.joint_names)
    if size is None:
        return ()
    if size != expected:
        named = f" ({', '.join(names)})" if names else ""
        single = " - a single-arm checkpoint cannot drive a bimanual rig" if size * 2 == expected else ""
        problems.append(
            f"checkpoint's {what} has {size} values{named}; the rig has {expected}"
            f" ({rig.joint_names[0]} ... {rig.joint_names[-1]}){single}"
        )
        return ()
    if names is None:
        return tuple(range(size))
    unknown = [name for name in names if name not in rig.joint_names]
    absent = [name for name in rig.joint_names if name not in names]
    if unknown or absent or len(set(names)) != size:
        problems.append(
            f"checkpoint's {what} joints {list(names)} differ from the rig's: unknown {unknown}, absent {absent}"
        )
        return ()
    return tuple(rig.joint_names.index(name) for name in names)


def _suggest(missing: list[str], unused: list[str], features: PolicyFeatures, rig: RigSpec) -> dict[str, str]:
    """Pair unmatched checkpoint cameras with unused rig cameras: same size first, then in order."""
    suggestion: dict[str, str] = {}
    free = list(unused)
    for key in missing:
        same = [name for name in free if rig.cameras[name] == features.cameras[key]]
        pick = (same or free or [None])[0]
        if pick is not None:
            suggestion[pick] = _short(key)
            free.remove(pick)
    return suggestion


def _names(dataset_names: Mapping[str, Any] | None, key: str, size: int | None) -> tuple[str, ...] | None:
    names = (dataset_names or {}).get(key)
    if isinstance(names, Mapping) and len(names) == 1:  # older datasets: {"motors": [...]}
        names = next(iter(names.values()))
    if isinstance(names, list) and len(names) == size and all(isinstance(name, str) for name in names):
        return tuple(names)
    return None


def _short(key: str) -> str:
    return key.removeprefix(IMAGE_PREFIX)


def _size(size: Size) -> str:
    return f"{size[0]}x{size[1]}"


def _names_list(cameras: Mapping[str, Size]) -> str:
    return ", ".join(repr(name) for name in cameras) or "none"


def _describe(cameras: Mapping[str, Size]) -> str:
    return ", ".join(f"{name} {_size(size)}" for name, size in cameras.items()) or "no cameras"
