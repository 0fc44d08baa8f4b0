"""The virtual rig's task: seeded cloth poses, an operator plan that reaches them, and what the plan does to the cloth.

The plan is played here on the arm model itself (the followers exactly at their goals, no servo
lag), through the same forward kinematics and cloth the virtual cameras use, and scored by the
cloth's ground truth: so a plan that misses its cloth, or a truth that misreads a fold, fails here
in a second rather than in a recorded episode.
"""

import functools
import itertools

import pytest

from robot.cameras.virtual.cloth import Cloth, ClothPose, Gripper
from robot.cameras.virtual.cloth_history import ClothLog
from robot.cameras.virtual.cloth_truth import cloth_truth
from robot.cameras.virtual.fold_task import (
    INCOMPLETE_FOLD,
    MISSED_GRASP,
    SIZE_RANGE_M,
    X_RANGE_M,
    Y_RANGE_M,
    YAW_RANGE_DEG,
    EpisodeDraw,
    FoldPlan,
    blind_draw,
    draw_episode,
    episode_seed,
    fold_plan,
)
from robot.cameras.virtual.kinematics import arm_pose
from robot.cameras.virtual.scene import SceneLayout
from robot.joints import JOINT_NAMES, Side
from robot.virtual.operator import CLOTH_CONTACT_FRACTION
from robot.virtual.trajectories import min_jerk

STEP_S = 0.02  # the scene steps its cloth at most every 20 ms


def _joints_at(frames: tuple[tuple[float, dict[str, float]], ...], t_s: float) -> dict[str, float]:
    """The operator's own interpolation (minimum jerk between keyframes)."""
    if t_s <= frames[0][0]:
        return frames[0][1]
    for (t0, a), (t1, b) in itertools.pairwise(frames):
        if t_s <= t1:
            s = min_jerk((t_s - t0) / max(1e-9, t1 - t0))
            return {j: a[j] + s * (b[j] - a[j]) for j in JOINT_NAMES}
    return frames[-1][1]


@functools.cache
def scores_of(seed: int, failure: str) -> dict[str, float]:
    """The truth of episode `seed`'s plan (made to fail as `failure` says), played on the arm model."""
    draw = _draw(seed, failure)
    return play(draw, fold_plan(draw))


def play(draw: EpisodeDraw, plan: FoldPlan) -> dict[str, float]:
    """Play `plan` on the arm model over a cloth at the draw's pose; the truth's scores."""
    layout = SceneLayout()
    cloth = Cloth(draw.pose, layout.cloth_grid)
    log = ClothLog(draw.pose, layout.cloth_grid)
    bases = {side: layout.base(side) for side in Side}
    t_s = 0.0
    while t_s < plan.duration_s + 1.0:
        grippers = {}
        for side in Side:
            pose = arm_pose(_joints_at(plan.keyframes[side], t_s), bases[side])
            opening = pose.opening
            if any(start <= t_s < end for start, end in plan.grasps[side]):
                opening = max(opening, CLOTH_CONTACT_FRACTION)  # the cloth stops the follower's jaws
            grippers[side] = Gripper(pose.grasp_point, opening)
        cloth.step(grippers, STEP_S)
        log.append(t_s, cloth.points(), dict(cloth.held))
        t_s += STEP_S
    return cloth_truth(log.history()).scores


def _draw(seed: int, failure: str) -> EpisodeDraw:
    draw = draw_episode(seed, failure_rate=0.0)
    return EpisodeDraw(seed, draw.pose, draw.variation.__class__(**{**draw.variation.__dict__, "failure": failure}))


def test_poses_are_seeded_within_their_ranges_and_differ_between_datasets():
    draws = [draw_episode(episode_seed("me/fold", i), 0.2) for i in range(200)]
    assert draw_episode(episode_seed("me/fold", 7), 0.2) == draws[7]  # the same episode, the same table
    poses = [d.pose for d in draws]
    assert all(X_RANGE_M[0] <= p.x_m <= X_RANGE_M[1] and Y_RANGE_M[0] <= p.y_m <= Y_RANGE_M[1] for p in poses)
    assert all(YAW_RANGE_DEG[0] <= p.yaw_deg <= YAW_RANGE_DEG[1] for p in poses)
    assert all(SIZE_RANGE_M[0] <= p.size_m <= SIZE_RANGE_M[1] for p in poses)
    assert len({p.x_m for p in poses}) == 200
    assert draw_episode(episode_seed("me/other", 7), 0.2).pose != draws[7].pose
    failures = [d.variation.failure for d in draws]
    assert 0.1 <= sum(bool(f) for f in failures) / len(failures) <= 0.3  # the rate asked for, 0.2
    assert {MISSED_GRASP, INCOMPLETE_FOLD} <= set(failures)
    assert {d.variation.fold_side for d in draws} == {Side.LEFT, Side.RIGHT}


# The corners of the pose ranges where a hand reaches farthest (found by solving all sixteen): the far
# edge rotated away from the fold hand, and the drag's end past a large cloth near the arms.
HARDEST_POSES = [
    (X_RANGE_M[0], Y_RANGE_M[1], YAW_RANGE_DEG[1], SIZE_RANGE_M[1]),
    (X_RANGE_M[1], Y_RANGE_M[1], YAW_RANGE_DEG[0], SIZE_RANGE_M[1]),
    (X_RANGE_M[0], Y_RANGE_M[0], YAW_RANGE_DEG[0], SIZE_RANGE_M[1]),
]


@pytest.mark.parametrize(("x_m", "y_m", "yaw_deg", "size_m"), HARDEST_POSES)
def test_every_grasp_of_the_plan_is_within_reach_at_the_ranges_corners(x_m, y_m, yaw_deg, size_m):
    base = draw_episode(3, 0.0)
    for side in Side:
        variation = base.variation.__class__(**{**base.variation.__dict__, "fold_side": side, "grasp_shift": -0.05})
        pose = base.pose.__class__(x_m, y_m, yaw_deg, size_m)
        plan = fold_plan(EpisodeDraw(3, pose, variation))
        assert plan.reach_error_m < 0.01, (side, plan.reach_error_m)  # a third of the grasp radius


@pytest.mark.parametrize("seed", [1, 2])  # a left and a right fold hand
def test_a_demonstration_folds_its_cloth_and_pushes_it_aside_by_truth(seed):
    """One hand carries the far edge by one point, so its corners droop: a real fold, not a tight one.

    R2 comes out 0.5-0.6 here (0.53-0.56 through the emulated servos, in so101-record); a fold that
    lays both corners scores >= 0.9 (tests/robot/cameras/test_cloth_truth.py).
    """
    scores = scores_of(seed, "")
    assert scores["R1"] >= 0.9, scores
    assert scores["R3"] >= 0.9, scores
    assert scores["R2"] >= 0.45, scores


def test_a_missed_grasp_and_an_incomplete_fold_score_as_the_rubric_says():
    assert scores_of(1, MISSED_GRASP)["R1"] < 0.3
    assert scores_of(2, INCOMPLETE_FOLD)["R2"] < scores_of(2, "")["R2"] - 0.2


def test_a_blind_operator_plans_for_the_middle_of_the_range_wherever_the_cloth_lies():
    draws = [draw_episode(episode_seed("me/fold", i), 0.0) for i in range(2)]
    assert draws[0].pose != draws[1].pose
    assert fold_plan(blind_draw(draws[0])).to_json() == fold_plan(blind_draw(draws[1])).to_json()
    # A small cloth at a corner of the range: the blind hand closes short of its far edge.
    small = ClothPose(X_RANGE_M[1], Y_RANGE_M[0], YAW_RANGE_DEG[1], SIZE_RANGE_M[0])
    corner = EpisodeDraw(5, small, draws[0].variation)
    seeing, blind = play(corner, fold_plan(corner)), play(corner, fold_plan(blind_draw(corner)))
    assert seeing["R1"] >= 0.9, seeing
    assert blind["R1"] < 0.5, blind


def test_the_evaluation_layer_knows_the_truth_definition_the_rig_writes():
    from evaluation.truth import KNOWN_DEFINITIONS
    from robot.cameras.virtual.cloth_truth import TRUTH_DEFINITION

    assert TRUTH_DEFINITION in KNOWN_DEFINITIONS  # bump both together: so101-judge refuses an unknown one
