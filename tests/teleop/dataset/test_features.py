"""The one features function matches what LeRobot derives for a bi_so_follower, and frames are checked."""

import numpy as np
import pytest

from robot.joints import BIMANUAL_KEYS
from teleop.dataset.errors import FrameError
from teleop.dataset.features import check_frame, dataset_features
from tests.teleop.dataset.helpers import CAMERAS, frame

PRODUCT_CAMERAS = (("left_wrist", 480, 640), ("right_wrist", 480, 640), ("overhead", 480, 640))


def lerobot_record_features(tmp_path, monkeypatch) -> dict:
    """Features exactly as `lerobot-record` builds them for a bi_so_follower with 2 wrist + 1 top camera."""
    from lerobot.cameras.opencv import OpenCVCameraConfig
    from lerobot.datasets.pipeline_features import aggregate_pipeline_dataset_features, create_initial_features
    from lerobot.processor import make_default_processors
    from lerobot.robots.bi_so_follower import BiSOFollower, BiSOFollowerConfig
    from lerobot.robots.so_follower import SOFollowerConfig
    from lerobot.utils.feature_utils import combine_feature_dicts

    def camera() -> OpenCVCameraConfig:
        return OpenCVCameraConfig(index_or_path=0, fps=30, width=640, height=480)

    config = BiSOFollowerConfig(
        id="probe",
        calibration_dir=tmp_path,
        left_arm_config=SOFollowerConfig(port="/dev/null", cameras={"wrist": camera()}),
        right_arm_config=SOFollowerConfig(port="/dev/null", cameras={"wrist": camera()}),
        cameras={"overhead": camera()},
    )
    robot = BiSOFollower(config)
    teleop_action, _, robot_observation = make_default_processors()
    return combine_feature_dicts(
        aggregate_pipeline_dataset_features(
            pipeline=teleop_action, initial_features=create_initial_features(action=robot.action_features)
        ),
        aggregate_pipeline_dataset_features(
            pipeline=robot_observation, initial_features=create_initial_features(observation=robot.observation_features)
        ),
    )


def test_features_are_exactly_what_lerobot_derives_for_a_bi_so_follower(tmp_path, monkeypatch):
    theirs = lerobot_record_features(tmp_path, monkeypatch)
    ours = dataset_features(PRODUCT_CAMERAS)
    assert ours == theirs
    assert list(ours) == ["action", "observation.state"] + [f"observation.images.{n}" for n, _, _ in PRODUCT_CAMERAS]
    assert ours["observation.state"]["names"] == list(BIMANUAL_KEYS)
    assert ours["observation.state"]["names"][0] == "left_shoulder_pan.pos"
    assert ours["action"]["names"][-1] == "right_gripper.pos"


def test_policy_features_are_the_three_cameras_the_state_and_the_action():
    from lerobot.configs.types import FeatureType
    from lerobot.utils.constants import DEFAULT_FEATURES
    from lerobot.utils.feature_utils import dataset_to_policy_features

    policy = dataset_to_policy_features({**dataset_features(PRODUCT_CAMERAS), **DEFAULT_FEATURES})
    assert {key: (feature.type, feature.shape) for key, feature in policy.items()} == {
        "observation.state": (FeatureType.STATE, (12,)),
        "action": (FeatureType.ACTION, (12,)),
        "observation.images.left_wrist": (FeatureType.VISUAL, (3, 480, 640)),
        "observation.images.right_wrist": (FeatureType.VISUAL, (3, 480, 640)),
        "observation.images.overhead": (FeatureType.VISUAL, (3, 480, 640)),
    }


def test_features_carry_no_timing_facts():
    keys = set(dataset_features(CAMERAS))
    assert not any("time" in key or "skew" in key or "capture" in key for key in keys)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s, a, i: (s[:6], a, i), "state has shape"),
        (lambda s, a, i: (s, a.reshape(3, 4), i), "action has shape"),
        (lambda s, a, i: (s, a, {k: v for k, v in i.items() if k != "overhead"}), "differ from the dataset"),
        (lambda s, a, i: (s, a, {**i, "overhead": i["overhead"][:, :, :1]}), "camera 'overhead'"),
        (lambda s, a, i: (s, a, {**i, "overhead": i["overhead"].astype(np.float32)}), "uint8"),
    ],
)
def test_a_frame_that_does_not_fit_is_refused_with_the_reason(change, message):
    state, action, images, _ = frame(0, 0)
    check_frame(CAMERAS, state, action, images)
    with pytest.raises(FrameError, match=message):
        check_frame(CAMERAS, *change(state, action, images))
