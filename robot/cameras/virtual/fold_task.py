"""The task on the virtual rig: where the tidied cloth lies, and how the scripted operator folds it from there.

Each episode draws, from its own seed, the cloth's pose and how this demonstration goes:

    draw_episode(seed, failure_rate) -> EpisodeDraw(pose, variation)
    blind_draw(draw) -> the same seed planned for the middle of every range (the blind baseline)
    fold_plan(draw, layout)          -> FoldPlan: per-arm keyframes in follower degrees + grasp windows

One arm (the clamp) pins the cloth's near edge to the table; the other (the fold arm) takes the
far edge, lifts it over and lays it onto the near edge, lets go and presses the fold; the clamp
lets go, takes the folded cloth and drags it aside towards its own side, out of where it was
folded. The operator sees the cloth as a person does (the scene's truth) and reaches it by inverse
kinematics on the arm model the cameras draw (reach.py). Demonstrations vary like a person's
(speed, grasp point, a pause, which hand folds) and fail at a set rate: a missed grasp (the fold
hand closes beside the edge) or an incomplete fold (it lets go half way).

The reach of an SO-101 at table height is about 0.35 m, and the arms stand 0.5 m apart, so both
hands reach only a narrow strip in the middle: the pose ranges below keep every target of the plan
within reach (tests/robot/cameras/test_fold_task.py solves them at the ranges' corners).
"""

import math
import zlib
from dataclasses import dataclass

import numpy as np

from robot.cameras.virtual.cloth import ClothPose
from robot.cameras.virtual.reach import solve_reach
from robot.cameras.virtual.scene import SceneLayout
from robot.joints import GRIPPER, JOINT_NAMES, Side

# The tidied cloth's pose ranges (uniform): centre x and y, rotation, side, metres and degrees.
X_RANGE_M = (-0.03, 0.03)
Y_RANGE_M = (0.16, 0.20)
YAW_RANGE_DEG = (-15.0, 15.0)
SIZE_RANGE_M = (0.16, 0.20)
SPEED_RANGE = (0.85, 1.2)  # a demonstration's pace against the nominal plan
PAUSE_RANGE_S = (0.0, 0.8)  # a hesitation after the grasp
GRASP_SHIFT_RANGE = (-0.05, 0.05)  # where along the edge the fold hand takes it, in sides
MISSED_GRASP, INCOMPLETE_FOLD = "missed_grasp", "incomplete_fold"

# Gripper goals, 0..100 (the follower's jaws stop on the cloth at 28). CLOSED stays above the leaders'
# squeeze gesture (teleop/gesture.py, 8): a clamp and a grasp held still together must not end the episode.
OPEN, CLOSED, DRAG_GRIP = 80.0, 15.0, 30.0
ABOVE_M, GRASP_M, LIFT_M, PRESS_M = 0.06, 0.015, 0.10, 0.012  # grasp-point heights over the table
# Targets are reached with the grasp point of jaws this far open (0..100): where they close on the cloth
# (the point between the tips drops ~2.5 cm as tilted jaws close from 80).
AIM_GRIPPER = 30.0
MISS_BESIDE = 0.75  # a missed grasp closes at the far edge's level this far out (sides): beside the cloth
READY_DEG = {
    "shoulder_pan": 16.6,
    "shoulder_lift": -60.8,
    "elbow_flex": 0.9,
    "wrist_flex": 100.0,
    "wrist_roll": 0.0,
    GRIPPER: 10.0,
}
_MIRRORED = ("shoulder_pan", "wrist_roll")  # the right arm's pose is the left's with these negated
_START_DEG = {"shoulder_pan": 30.0, "shoulder_lift": 50.0, "elbow_flex": -40.0, "wrist_flex": 40.0}


@dataclass(frozen=True)
class Variation:
    """How one demonstration departs from the nominal plan."""

    fold_side: Side  # the hand that folds; the other clamps and then drags the cloth aside
    speed: float  # > 1 is faster
    grasp_shift: float  # along the far edge, in sides, towards the fold hand's own side when positive
    pause_s: float  # hesitation after the grasp, seconds
    failure: str = ""  # "", MISSED_GRASP or INCOMPLETE_FOLD


@dataclass(frozen=True)
class EpisodeDraw:
    """Everything an episode's seed decides on the virtual table."""

    seed: int
    pose: ClothPose
    variation: Variation


@dataclass(frozen=True)
class FoldPlan:
    """The operator's plan: per side, (time s, follower joints) keyframes, and when each follower holds cloth."""

    keyframes: dict[Side, tuple[tuple[float, dict[str, float]], ...]]  # first at t = 0 is the ready pose
    grasps: dict[Side, tuple[tuple[float, float], ...]]  # (start_s, end_s) windows, plan time
    duration_s: float
    reach_error_m: float  # the farthest a grasp-height keyframe's grasp point stays from its target

    def to_json(self) -> dict[str, object]:
        """The plan as the virtual rig's control API takes it (`perform`)."""
        return {
            "keyframes": {str(side): [[t, joints] for t, joints in frames] for side, frames in self.keyframes.items()},
            "grasps": {str(side): [list(window) for window in windows] for side, windows in self.grasps.items()},
        }


def ready_plan() -> dict[str, object]:
    """A plan that only brings both hands to the ready pose.

    Played before the first episode: leaders resting with their grippers shut would read as the squeeze gesture.
    """
    return {"keyframes": {str(side): [[0.0, _mirror(side, READY_DEG)]] for side in Side}, "grasps": {}}


def episode_seed(dataset_key: str, episode_index: int) -> int:
    """The seed of one episode of one dataset: stable across runs, different between datasets."""
    return zlib.crc32(f"{dataset_key}:{episode_index}".encode())


def draw_episode(seed: int, failure_rate: float) -> EpisodeDraw:
    """The cloth's pose and the demonstration's variation for `seed`; fails with probability `failure_rate`."""
    rng = np.random.default_rng(seed)
    pose = ClothPose(
        x_m=float(rng.uniform(*X_RANGE_M)),
        y_m=float(rng.uniform(*Y_RANGE_M)),
        yaw_deg=float(rng.uniform(*YAW_RANGE_DEG)),
        size_m=float(rng.uniform(*SIZE_RANGE_M)),
    )
    fails = rng.random() < failure_rate
    variation = Variation(
        fold_side=Side.LEFT if rng.random() < 0.5 else Side.RIGHT,
        speed=float(rng.uniform(*SPEED_RANGE)),
        grasp_shift=float(rng.uniform(*GRASP_SHIFT_RANGE)),
        pause_s=float(rng.uniform(*PAUSE_RANGE_S)),
        failure=(MISSED_GRASP if rng.random() < 0.5 else INCOMPLETE_FOLD) if fails else "",
    )
    return EpisodeDraw(seed, pose, variation)


def blind_draw(draw: EpisodeDraw) -> EpisodeDraw:
    """`draw` as an operator who never looks would do it: the plan for the middle of every range.

    The cloth still lies at `draw.pose`; only the plan ignores it (virtual.operator_blind).
    """
    middle = ClothPose(
        x_m=float(np.mean(X_RANGE_M)),
        y_m=float(np.mean(Y_RANGE_M)),
        yaw_deg=float(np.mean(YAW_RANGE_DEG)),
        size_m=float(np.mean(SIZE_RANGE_M)),
    )
    nominal = Variation(fold_side=Side.LEFT, speed=1.0, grasp_shift=0.0, pause_s=float(np.mean(PAUSE_RANGE_S)))
    return EpisodeDraw(draw.seed, middle, nominal)


def _mirror(side: Side, joints: dict[str, float]) -> dict[str, float]:
    return {j: -v if side is Side.RIGHT and j in _MIRRORED else v for j, v in joints.items()}


class _Hand:
    """One arm's keyframes, solved by inverse kinematics from the last pose (they converge fastest from there)."""

    def __init__(self, side: Side, layout: SceneLayout) -> None:
        self.side = side
        self.base = layout.base(side)
        self.frames: list[tuple[float, dict[str, float]]] = [(0.0, _mirror(side, READY_DEG))]
        self._last = _mirror(side, _START_DEG)
        self.worst_error_m = 0.0  # the farthest a grasp-height keyframe stays from its target

    def reach(self, t_s: float, xy: np.ndarray, z_m: float, gripper: float) -> None:
        target = np.array([xy[0], xy[1], z_m])
        best = solve_reach(target, self.base, self._last, gripper=AIM_GRIPPER)
        if best.error_m > 0.003:  # stuck on the way from the last pose: try from the generic reach too
            fresh = solve_reach(target, self.base, _mirror(self.side, _START_DEG), gripper=AIM_GRIPPER)
            best = min(best, fresh, key=lambda r: r.error_m)
        self._last = {j: best.joints[j] for j in _START_DEG}
        if z_m <= GRASP_M:  # waypoints above the cloth may give a centimetre for the jaws pointing down
            self.worst_error_m = max(self.worst_error_m, best.error_m)
        self.frames.append((t_s, {j: round(best.joints[j], 3) for j in JOINT_NAMES} | {GRIPPER: gripper}))

    def grip(self, t_s: float, gripper: float) -> None:
        """The same pose, the gripper to `gripper`."""
        self.frames.append((t_s, self.frames[-1][1] | {GRIPPER: gripper}))

    def hold(self, t_s: float) -> None:
        self.frames.append((t_s, dict(self.frames[-1][1])))

    def rest(self, t_s: float, close_s: float = 0.5) -> None:
        """Back to the ready pose with the jaws open, closing them only there (closing near the cloth takes it)."""
        ready = _mirror(self.side, READY_DEG)
        self.frames.append((t_s, ready | {GRIPPER: OPEN}))
        self.frames.append((t_s + close_s, ready))


def fold_plan(draw: EpisodeDraw, layout: SceneLayout | None = None) -> FoldPlan:
    """The operator's keyframes for one episode (about 15 s at nominal speed; ~1 s of solving)."""
    layout = layout or SceneLayout()
    pose, var = draw.pose, draw.variation
    fold_side = var.fold_side
    clamp_side = Side.RIGHT if fold_side is Side.LEFT else Side.LEFT
    toward_fold = -1.0 if fold_side is Side.LEFT else 1.0  # the cloth frame's u points to the right arm
    fold, clamp = _Hand(fold_side, layout), _Hand(clamp_side, layout)
    u_fold = toward_fold * (0.08 + var.grasp_shift)
    far_v = 0.46
    grasp_u = toward_fold * MISS_BESIDE if var.failure == MISSED_GRASP else u_fold
    lay_v = 0.05 if var.failure == INCOMPLETE_FOLD else -0.40
    clamp_at = pose.to_world(-toward_fold * 0.25, -0.40)

    def at(t_s: float) -> float:  # nominal plan time -> this demonstration's time
        return round(t_s / var.speed, 3)

    # Both hands over their points, down, close: the clamp pins the near edge, the fold hand takes the far one.
    clamp.reach(at(1.5), clamp_at, ABOVE_M, OPEN)
    fold.reach(at(1.5), pose.to_world(grasp_u, far_v), ABOVE_M, OPEN)
    clamp.reach(at(2.2), clamp_at, GRASP_M, OPEN)
    fold.reach(at(2.2), pose.to_world(grasp_u, far_v), GRASP_M, OPEN)
    clamp.grip(at(2.7), CLOSED)
    fold.grip(at(2.7), CLOSED)
    pause = var.pause_s
    fold.hold(at(3.0) + pause)
    # Lift over the middle, across, down onto the near edge, let go.
    fold.reach(at(4.2) + pause, pose.to_world(u_fold, 0.0), LIFT_M, CLOSED)
    fold.reach(at(5.4) + pause, pose.to_world(u_fold, lay_v), ABOVE_M, CLOSED)
    fold.reach(at(6.0) + pause, pose.to_world(u_fold, lay_v), GRASP_M, CLOSED)
    fold.grip(at(6.5) + pause, OPEN)
    # Press the fold (jaws open: an open gripper takes nothing), then home.
    fold.reach(at(7.1) + pause, pose.to_world(u_fold, -0.2), ABOVE_M, OPEN)
    fold.reach(at(7.6) + pause, pose.to_world(u_fold, -0.2), PRESS_M, OPEN)
    fold.reach(at(8.1) + pause, pose.to_world(u_fold, -0.2), ABOVE_M, OPEN)
    fold.rest(at(9.6) + pause)
    # The clamp lets go, takes the folded cloth at its own end and drags it aside, past the cloth's footprint.
    clamp.hold(at(7.6) + pause)
    clamp.grip(at(8.1) + pause, OPEN)
    grab = pose.to_world(-toward_fold * 0.30, -0.25)
    clamp.reach(at(8.6) + pause, grab, ABOVE_M, OPEN)
    clamp.reach(at(9.1) + pause, grab, GRASP_M, OPEN)
    clamp.grip(at(9.6) + pause, DRAG_GRIP)
    reach_m = pose.size_m * (abs(math.cos(math.radians(pose.yaw_deg))) + abs(math.sin(math.radians(pose.yaw_deg))))
    aside = grab + np.array([-toward_fold * (reach_m + 0.02), 0.0])
    clamp.reach(at(11.4) + pause, aside, GRASP_M, DRAG_GRIP)
    clamp.grip(at(11.9) + pause, OPEN)
    clamp.reach(at(12.4) + pause, aside, ABOVE_M, OPEN)
    clamp.rest(at(14.0) + pause)
    fold.hold(clamp.frames[-1][0])
    grasps = {clamp_side: ((at(2.6), at(8.0) + pause), (at(9.5) + pause, at(11.8) + pause))}
    grasps[fold_side] = () if var.failure == MISSED_GRASP else ((at(2.6), at(6.4) + pause),)
    return FoldPlan(
        keyframes={fold_side: tuple(fold.frames), clamp_side: tuple(clamp.frames)},
        grasps=grasps,
        duration_s=clamp.frames[-1][0],
        reach_error_m=max(fold.worst_error_m, clamp.worst_error_m),
    )
