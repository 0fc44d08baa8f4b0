"""`JointValues`, the currency of the rig's seams: the dataset's order, adapters that round-trip, immutable."""

import math

import numpy as np
import pytest

from robot.joint_values import JointValues
from robot.joints import BIMANUAL_KEYS, JOINT_NAMES, Side, joint_key
from teleop.dataset.features import dataset_features


def numbered() -> JointValues:
    return JointValues.from_vector(np.arange(12.0))


def test_the_vector_order_is_the_datasets_and_every_view_names_the_same_value():
    values = numbered()
    names = dataset_features(())["action"]["names"]
    assert list(values.to_flat()) == list(BIMANUAL_KEYS) == names
    for index, key in enumerate(BIMANUAL_KEYS):
        side, joint = next((s, j) for s in Side for j in JOINT_NAMES if joint_key(s, j) == key)
        assert values[side, joint] == values.vector[index] == values.side(side)[joint] == values.to_flat()[key] == index


def test_each_adapter_round_trips():
    values = numbered()
    assert JointValues.from_flat(values.to_flat()) == values
    assert JointValues.from_sides(values.sides()) == values
    assert JointValues.from_vector(values.vector) == values


def test_it_cannot_be_changed_in_place_and_copies_what_it_is_given():
    source = np.zeros((2, 6))
    values = JointValues(source)
    source[0, 0] = 5.0
    assert values[Side.LEFT, "shoulder_pan"] == 0.0
    with pytest.raises(ValueError, match="read-only"):
        values.array[0, 0] = 1.0
    moved = values.with_joint(Side.RIGHT, "gripper", 80.0)
    assert (moved[Side.RIGHT, "gripper"], values[Side.RIGHT, "gripper"]) == (80.0, 0.0)


def test_missing_or_misshapen_values_are_refused_naming_what_is_missing():
    flat = numbered().to_flat()
    del flat["right_gripper.pos"]
    with pytest.raises(ValueError, match=r"lack right_gripper\.pos"):
        JointValues.from_flat(flat)
    with pytest.raises(ValueError, match=r"lack left_shoulder_lift\.pos, .*left_gripper\.pos$"):
        JointValues.from_sides({Side.LEFT: {"shoulder_pan": 1.0}, Side.RIGHT: numbered().side(Side.RIGHT)})
    with pytest.raises(ValueError, match=r"shape \(11,\)"):
        JointValues.from_vector(np.zeros(11))
    with pytest.raises(TypeError):
        iter(numbered())  # not a mapping: say which order is meant (vector, sides, to_flat)


def test_held_joints_take_the_fallback_and_differences_are_per_joint():
    held = numbered()
    row = np.full(12, math.nan)
    row[3] = 40.0
    goal = JointValues.from_vector(row).fill_missing(held)
    assert goal.vector[3] == 40.0
    assert np.array_equal(np.delete(goal.vector, 3), np.delete(held.vector, 3))
    assert goal.max_abs_difference(held) == 37.0
    assert goal != held
    assert JointValues.from_vector(row) == JointValues.from_vector(row)  # NaN equals NaN here
