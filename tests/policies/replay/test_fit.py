"""Whether a dataset fits the rig: joint names, single-arm recordings, joint maps and the replay rate."""

from pathlib import Path

import numpy as np
import pytest

from policies.replay.dataset import EpisodeData, EpisodeInfo, ReplayDataset
from policies.replay.errors import DatasetFitError, ReplayOptionError
from policies.replay.fit import fit_dataset
from robot.joint_map import SINGLE_ARM_NAMES, parse_joint_map
from robot.joints import BIMANUAL_KEYS
from robot.shell.errors import UsageError


def dataset(names=BIMANUAL_KEYS, fps=30, state=True) -> ReplayDataset:
    info = EpisodeInfo(index=0, length=3, task="Fold the cloth", data_path=Path("x.parquet"), videos=())
    return ReplayDataset(
        root=Path("/data/fold"),
        repo_id="me/fold",
        fps=fps,
        robot_type="bi_so_follower",
        action_names=tuple(names),
        state_names=tuple(names) if state else None,
        cameras={},
        episodes=(info,),
    )


def episode(ds: ReplayDataset) -> EpisodeData:
    width = len(ds.action_names)
    actions = np.arange(3 * width, dtype=np.float32).reshape(3, width)
    return EpisodeData(ds.episodes[0], actions, actions + 0.5 if ds.state_names else None)


def test_a_bimanual_dataset_fits_whatever_its_column_order():
    shuffled = list(reversed(BIMANUAL_KEYS))
    ds = dataset(shuffled)
    fit = fit_dataset(ds, joint_map="", rig_fps=30, fps=None)
    actions = fit.actions(episode(ds))
    assert fit.held == ()
    assert fit.fps == 30
    assert fit.time_scale == 1.0
    # Column j of the dataset is rig joint 11 - j.
    np.testing.assert_array_equal(actions[:, 0], episode(ds).actions[:, 11])
    np.testing.assert_array_equal(fit.states(episode(ds))[:, 11], episode(ds).states[:, 0])


def test_a_single_arm_recording_is_refused_naming_the_difference_and_the_option():
    with pytest.raises(DatasetFitError) as error:
        fit_dataset(dataset(SINGLE_ARM_NAMES), joint_map="", rig_fps=30, fps=None)
    message = str(error.value)
    assert "single-arm recording (6 joints" in message
    assert "two arms (12 joints)" in message
    assert "--joint_map=left" in message


def test_joint_map_left_drives_the_left_arm_and_holds_the_right():
    ds = dataset(SINGLE_ARM_NAMES)
    fit = fit_dataset(ds, joint_map="left", rig_fps=30, fps=None)
    actions = fit.actions(episode(ds))
    assert fit.held == tuple(k for k in BIMANUAL_KEYS if k.startswith("right_"))
    np.testing.assert_array_equal(actions[:, :6], episode(ds).actions)
    assert np.isnan(actions[:, 6:]).all()


def test_other_joint_names_are_refused_with_the_missing_and_extra_names():
    names = [k.replace("left_", "arm_a_") for k in BIMANUAL_KEYS]
    with pytest.raises(DatasetFitError) as error:
        fit_dataset(dataset(names), joint_map="", rig_fps=30, fps=None)
    message = str(error.value)
    assert "left_shoulder_pan.pos" in message
    assert "arm_a_shoulder_pan.pos" in message
    assert "--joint_map=" in message


def test_a_json_joint_map_renames_columns_and_must_name_existing_ones():
    names = [k.replace("left_", "arm_a_") for k in BIMANUAL_KEYS]
    mapping = {k: k.replace("left_", "arm_a_") for k in BIMANUAL_KEYS}
    import json

    fit = fit_dataset(dataset(names), joint_map=json.dumps(mapping), rig_fps=30, fps=None)
    assert fit.held == ()
    assert fit.mapped
    with pytest.raises(DatasetFitError, match=r"nope\.pos"):
        fit_dataset(dataset(names), joint_map='{"left_gripper.pos": "nope.pos"}', rig_fps=30, fps=None)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [("up", "neither left, right nor a JSON object"), ('{"left_knee.pos": "x"}', "not rig joints"), ("[1]", "JSON")],
)
def test_bad_joint_maps_are_refused(text, fragment):
    with pytest.raises(ReplayOptionError, match=fragment):
        fit_dataset(dataset(), joint_map=text, rig_fps=30, fps=None)
    with pytest.raises(UsageError, match=fragment):  # so101-fit reads the same map: a usage error there
        parse_joint_map(text)


def test_another_fps_is_refused_unless_an_fps_is_given():
    with pytest.raises(DatasetFitError) as error:
        fit_dataset(dataset(fps=15), joint_map="", rig_fps=30, fps=None)
    assert "recorded at 15 fps" in str(error.value)
    assert "--fps=15" in str(error.value)
    fit = fit_dataset(dataset(fps=15), joint_map="", rig_fps=30, fps=15)
    assert fit.fps == 15
    assert fit.time_scale == 1.0
    slow = fit_dataset(dataset(fps=30), joint_map="", rig_fps=30, fps=15)
    assert slow.time_scale == 2.0  # one recorded frame per tick at half the rate
