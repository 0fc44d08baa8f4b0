"""The virtual scene: SO-101 kinematics, the cloth a gripper folds, and what each view shows."""

import numpy as np
import pytest

from robot.cameras.virtual.drawing import CLOTH_UNDER_RGB, PRINTED_RGB
from robot.cameras.virtual.joint_sources import FOLD_DURATION_S, constant_source, fold_source, ready_pose
from robot.cameras.virtual.kinematics import arm_pose
from robot.cameras.virtual.scene import SceneLayout, VirtualScene
from robot.cameras.virtual.views import make_renderer
from robot.joints import JOINT_NAMES, CameraRole, Side

ZERO = dict.fromkeys(JOINT_NAMES, 0.0)


def test_zero_pose_matches_the_urdf_chain() -> None:
    # so101_new_calib.urdf at zero: upper arm up, forearm forward along the base's -y.
    pose = arm_pose(ZERO, np.eye(4))
    elbow, tip = pose.points[3], pose.points[-1]
    assert elbow == pytest.approx([0.0033, -0.0807, 0.2622], abs=1e-3)
    assert tip == pytest.approx([0.0206, -0.3756, 0.2590], abs=1e-3)


def test_positive_lift_and_elbow_lower_the_hand_and_the_gripper_opens() -> None:
    rest = arm_pose(ZERO, np.eye(4))
    lowered = arm_pose({**ZERO, "shoulder_lift": 30.0, "elbow_flex": 30.0}, np.eye(4))
    assert lowered.points[-1][2] < rest.points[-1][2] - 0.1
    opened = arm_pose({**ZERO, "gripper": 100.0}, np.eye(4))
    gap_closed = np.linalg.norm(rest.moving_jaw[1] - rest.fixed_jaw[1])
    gap_open = np.linalg.norm(opened.moving_jaw[1] - opened.fixed_jaw[1])
    assert gap_closed < 0.005 < 0.06 < gap_open


def test_arms_stand_apart_and_face_the_table() -> None:
    layout = SceneLayout()
    pose = ready_pose()
    for side in Side:
        for joint in ZERO:
            pose = pose.with_joint(side, joint, 0.0)
    scene = VirtualScene(constant_source(pose))
    state = scene.observe()
    left, right = state.arms[Side.LEFT], state.arms[Side.RIGHT]
    assert right.points[1][0] - left.points[1][0] == pytest.approx(layout.base_separation_m)
    assert left.points[-1][1] > 0.3  # reaching across the table (+y)
    assert right.points[-1][1] > 0.3


def test_views_render_rgb_images_that_follow_the_arms() -> None:
    now = [0.0]
    positions = [ready_pose()]
    scene = VirtualScene(lambda: positions[0], clock=lambda: now[0])
    renderers = {view: make_renderer(view, scene.layout, 160, 120) for view in CameraRole}
    before = {view: render(scene.observe()) for view, render in renderers.items()}
    for view, image in before.items():
        assert (image.shape, image.dtype) == ((120, 160, 3), np.uint8), view
        assert np.array_equal(image, renderers[view](scene.observe()))  # deterministic
    moved = positions[0].with_joint(Side.LEFT, "shoulder_pan", 40.0).with_joint(Side.RIGHT, "gripper", 100.0)
    positions[0] = moved.with_joint(Side.LEFT, "wrist_flex", 60.0)
    now[0] += 0.1
    after = {view: render(scene.observe()) for view, render in renderers.items()}
    for view in CameraRole:
        assert not np.array_equal(before[view], after[view]), view


def test_overhead_view_shows_both_arms() -> None:
    scene = VirtualScene(constant_source())
    image = make_renderer(CameraRole.OVERHEAD, scene.layout, 320, 240)(scene.observe())
    printed = np.all(np.abs(image.astype(int) - PRINTED_RGB) < 30, axis=2)
    assert printed[:, :160].sum() > 50
    assert printed[:, 160:].sum() > 50


def test_closed_grippers_fold_the_cloth() -> None:
    now = [0.0]
    scene = VirtualScene(fold_source(lambda: now[0], start_s=0.0), clock=lambda: now[0])
    render = make_renderer(CameraRole.OVERHEAD, scene.layout, 320, 240)
    flat = scene.observe()
    corner = flat.cloth[0, 0].copy()  # near-left corner, where the left gripper grasps
    underside = np.all(render(flat) == CLOTH_UNDER_RGB, axis=2).sum()
    while now[0] < FOLD_DURATION_S:
        now[0] += 0.02
        state = scene.observe()
    cy = scene.layout.cloth_center_m[1]
    assert state.cloth[0, 0][1] > cy + 0.05  # the near edge now lies over the far half
    assert state.cloth[0, 0][1] > corner[1] + 0.15
    assert state.cloth[-1, 0] == pytest.approx(flat.cloth[-1, 0], abs=0.04)  # the far edge stayed (nearly)
    assert np.all(render(state) == CLOTH_UNDER_RGB, axis=2).sum() > underside + 500  # folded over
