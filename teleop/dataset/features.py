"""The dataset schema of a bimanual SO-101 rig: the one function that defines the LeRobot features.

    observation.state              float32 (12,)  names left_shoulder_pan.pos ... right_gripper.pos
    action                         float32 (12,)  same names: the goal the followers were sent
    observation.images.<camera>    video (h, w, 3) names [height, width, channels], one per camera
    intervention                   bool (1,)      only in datasets of rollouts with corrections: True on
                                                  the frames a person drove (LeRobot's DAgger feature)

This is exactly what LeRobot 0.6.1 derives for a `bi_so_follower` with those cameras
(`hw_to_dataset_features` through `aggregate_pipeline_dataset_features`, as `lerobot-record` does),
so `lerobot-train` and `lerobot-record --resume` treat our datasets as their own. Per-frame timing
and quality facts are deliberately not features: they live in sidecar files (see `sidecar.py`),
so no policy is ever fed them.
"""

from collections.abc import Mapping, Sequence

import numpy as np

from robot.cameras.shape import CameraShape
from robot.joints import BIMANUAL_KEYS
from teleop.dataset.errors import FrameError
from teleop.dataset.vocabulary import ACTION_KEY, STATE_KEY, camera_key

ROBOT_TYPE = "bi_so_follower"
# LeRobot 0.6.1's rollout strategies tag a person's correction frames with this feature (same name,
# dtype and shape), so `lerobot-train` and a dataset filter treat our corrections as theirs.
INTERVENTION_KEY = "intervention"
INTERVENTION_FEATURE = {"dtype": "bool", "shape": (1,), "names": None}
# The per-frame fact (in the timing handed to the writer) whose value becomes the feature.
INTERVENTION_FACT = "control.intervention"

# Codec names as they appear in info.json ("video.codec") for each encoder we allow.
CODEC_NAMES: dict[str, str] = {"libsvtav1": "av1", "libaom-av1": "av1", "h264": "h264", "libx264": "h264"}


def dataset_features(cameras: Sequence[CameraShape], *, intervention: bool = False) -> dict:
    """LeRobot features for a bimanual SO-101 rig with these cameras (name, height, width).

    Camera features come in the order given; the product uses left_wrist, right_wrist, overhead.
    `intervention`: the rollouts may be corrected by a person, and each frame says whether it was.
    """
    joints = {"dtype": "float32", "shape": (len(BIMANUAL_KEYS),), "names": list(BIMANUAL_KEYS)}
    features: dict = {ACTION_KEY: dict(joints, names=list(BIMANUAL_KEYS)), STATE_KEY: joints}
    for name, height, width in cameras:
        features[camera_key(name)] = {
            "dtype": "video",
            "shape": (height, width, 3),
            "names": ["height", "width", "channels"],
            "info": {"is_depth_map": False},
        }
    if intervention:
        features[INTERVENTION_KEY] = dict(INTERVENTION_FEATURE)
    return features


def check_frame(
    cameras: Sequence[CameraShape], state: np.ndarray, action: np.ndarray, images: Mapping[str, np.ndarray]
) -> None:
    """Refuse a frame that does not fit the features (wrong joint count, camera set, size or dtype).

    Raises:
        FrameError: naming the part that does not fit.
    """
    for what, vector in (("state", state), ("action", action)):
        if np.shape(vector) != (len(BIMANUAL_KEYS),):
            raise FrameError(
                f"{what} has shape {np.shape(vector)}; expected ({len(BIMANUAL_KEYS)},) in BIMANUAL_KEYS order"
            )
    expected = {name: (height, width, 3) for name, height, width in cameras}
    if set(images) != set(expected):
        raise FrameError(f"frame cameras {sorted(images)} differ from the dataset's {sorted(expected)}")
    for name, image in images.items():
        if image.shape != expected[name] or image.dtype != np.uint8:
            raise FrameError(
                f"camera {name!r} image is {image.dtype} {image.shape}; expected uint8 {expected[name]} (RGB)"
            )
