"""Hand trajectories for the scripted operator, as keyframes in fractions of each joint's range.

A pose maps joint names to a fraction of the joint's range of motion (0 = range_min, 1 =
range_max; a little beyond pushes against the mechanical stop). Between keyframes the hand moves
along a minimum-jerk profile, the way people move. `None` in a pose means "where the joint was
when the trajectory started".
"""

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from robot.joints import JOINT_NAMES, Side

Pose = dict[str, float | None]


@dataclass(frozen=True)
class Keyframe:
    """Reach `pose` at `t_s` seconds after the start."""

    t_s: float
    pose: Pose
    relative: bool = False  # the pose's values are offsets from where each joint was at the start


@dataclass(frozen=True)
class Trajectory:
    """Per-arm keyframes plus the moments a follower's gripper takes or lets go of the cloth."""

    name: str
    keyframes: dict[str, tuple[Keyframe, ...]]  # arm name -> keyframes (first at t = 0)
    # arm -> (grasp_s, release_s) windows in which that follower's gripper holds the cloth
    grasps: dict[str, tuple[tuple[float, float], ...]] = field(default_factory=dict)
    release_at_end: bool = False  # let go of the joints when done (else the hands hold the last pose)

    @property
    def duration_s(self) -> float:
        """When the last keyframe is reached."""
        return max((frames[-1].t_s for frames in self.keyframes.values() if frames), default=0.0)


def min_jerk(s: float) -> float:
    """Minimum-jerk blend for s in [0, 1]."""
    s = min(1.0, max(0.0, s))
    return s * s * s * (10.0 - 15.0 * s + 6.0 * s * s)


def sample(frames: tuple[Keyframe, ...], t_s: float, start: dict[str, float]) -> dict[str, float]:
    """The hand pose (fractions) at `t_s`; `start` fills the `None` entries."""

    def value(frame: Keyframe, joint: str) -> float:
        v = frame.pose.get(joint)
        if frame.relative:
            return start[joint] + (v or 0.0)
        return start[joint] if v is None else v

    if t_s <= frames[0].t_s:
        return {j: value(frames[0], j) for j in JOINT_NAMES}
    for before, after in itertools.pairwise(frames):
        if t_s <= after.t_s:
            s = min_jerk((t_s - before.t_s) / max(1e-9, after.t_s - before.t_s))
            return {j: value(before, j) + s * (value(after, j) - value(before, j)) for j in JOINT_NAMES}
    return {j: value(frames[-1], j) for j in JOINT_NAMES}


_HERE: Pose = dict.fromkeys(JOINT_NAMES)


def to_pose(arms: list[str], target: dict[str, dict[str, float]], move_s: float) -> Trajectory:
    """Move each arm from where it is to `target[arm]` (fractions) in `move_s`, then hold."""
    return Trajectory(
        name="to_pose",
        keyframes={arm: (Keyframe(0.0, _HERE), Keyframe(move_s, dict(target[arm]))) for arm in arms},
    )


def correction(arms: list[str], move_s: float = 1.5) -> Trajectory:
    """A person's correction on the leaders: a small reach from wherever they are, and back, in 2 x `move_s`.

    Relative to the start, so it follows a handover from any pose without a jump.
    """
    reach: Pose = {"shoulder_pan": 0.06, "elbow_flex": -0.06, "gripper": 0.15}
    frames = (
        Keyframe(0.0, {}, relative=True),
        Keyframe(move_s, reach, relative=True),
        Keyframe(2 * move_s, {}, relative=True),
    )
    return Trajectory(name="correction", keyframes=dict.fromkeys(arms, frames))


def calibration_sweep(arms: list[str], middle: dict[str, dict[str, float]]) -> Trajectory:
    """What a person does for LeRobot's range recording: every joint to both stops, then back.

    All joints of an arm move together (LeRobot only tracks each joint's min and max, so the
    order does not matter), which keeps a virtual calibration to a few seconds per arm.
    """
    keyframes = {}
    for arm in arms:
        low = dict.fromkeys(JOINT_NAMES, -0.05)
        high = dict.fromkeys(JOINT_NAMES, 1.05)
        keyframes[arm] = (
            Keyframe(0.0, _HERE),
            Keyframe(1.2, low),
            Keyframe(1.5, low),
            Keyframe(2.9, high),
            Keyframe(3.2, high),
            Keyframe(4.2, dict(middle[arm])),
        )
    return Trajectory(name="calibration_sweep", keyframes=keyframes, release_at_end=True)


# A cloth fold seen from the left arm; the right arm mirrors shoulder_pan and wrist_roll.
_FOLD_LEFT: tuple[tuple[float, Pose], ...] = (
    (
        0.0,
        {
            "shoulder_pan": 0.50,
            "shoulder_lift": 0.10,
            "elbow_flex": 0.88,
            "wrist_flex": 0.60,
            "wrist_roll": 0.50,
            "gripper": 0.10,
        },
    ),  # rest
    (
        2.0,
        {
            "shoulder_pan": 0.58,
            "shoulder_lift": 0.42,
            "elbow_flex": 0.55,
            "wrist_flex": 0.42,
            "wrist_roll": 0.50,
            "gripper": 0.85,
        },
    ),  # reach over the cloth edge, open
    (
        3.2,
        {
            "shoulder_pan": 0.58,
            "shoulder_lift": 0.47,
            "elbow_flex": 0.60,
            "wrist_flex": 0.36,
            "wrist_roll": 0.50,
            "gripper": 0.85,
        },
    ),  # lower onto the edge
    (
        4.0,
        {
            "shoulder_pan": 0.58,
            "shoulder_lift": 0.47,
            "elbow_flex": 0.60,
            "wrist_flex": 0.36,
            "wrist_roll": 0.50,
            "gripper": 0.05,
        },
    ),  # grasp (the cloth stops the jaws)
    (
        6.5,
        {
            "shoulder_pan": 0.54,
            "shoulder_lift": 0.36,
            "elbow_flex": 0.40,
            "wrist_flex": 0.50,
            "wrist_roll": 0.56,
            "gripper": 0.05,
        },
    ),  # lift and fold over
    (
        8.0,
        {
            "shoulder_pan": 0.52,
            "shoulder_lift": 0.44,
            "elbow_flex": 0.47,
            "wrist_flex": 0.40,
            "wrist_roll": 0.56,
            "gripper": 0.05,
        },
    ),  # lay it down
    (
        8.8,
        {
            "shoulder_pan": 0.52,
            "shoulder_lift": 0.46,
            "elbow_flex": 0.47,
            "wrist_flex": 0.38,
            "wrist_roll": 0.56,
            "gripper": 0.80,
        },
    ),  # press and release
    (
        10.5,
        {
            "shoulder_pan": 0.40,
            "shoulder_lift": 0.45,
            "elbow_flex": 0.50,
            "wrist_flex": 0.38,
            "wrist_roll": 0.50,
            "gripper": 0.30,
        },
    ),  # push the folded cloth aside
    (
        12.5,
        {
            "shoulder_pan": 0.50,
            "shoulder_lift": 0.10,
            "elbow_flex": 0.88,
            "wrist_flex": 0.60,
            "wrist_roll": 0.50,
            "gripper": 0.10,
        },
    ),  # back to rest
)
_MIRRORED = ("shoulder_pan", "wrist_roll")
_GRASP_S = (3.6, 8.5)


def _mirror(pose: Pose) -> Pose:
    return {j: (1.0 - v if j in _MIRRORED and v is not None else v) for j, v in pose.items()}


def cloth_fold(side_to_arm: dict[Side, str], side_to_follower: dict[Side, str] | None = None) -> Trajectory:
    """The demonstration: reach, grasp a cloth edge, fold, press, push aside, back to rest.

    `side_to_arm` names the arm the hands move (the leaders when teleoperating); the grasp
    windows go to `side_to_follower`, whose grippers meet the cloth.
    """
    keyframes = {}
    for side, arm in side_to_arm.items():
        frames = tuple(Keyframe(t, pose if side is Side.LEFT else _mirror(pose)) for t, pose in _FOLD_LEFT)
        # Start from wherever the hands are, reaching the rest pose in the first second.
        keyframes[arm] = (Keyframe(0.0, _HERE), *(Keyframe(f.t_s + 1.0, f.pose) for f in frames))
    grasps = {}
    for arm in (side_to_follower or {}).values():
        grasps[arm] = ((_GRASP_S[0] + 1.0, _GRASP_S[1] + 1.0),)
    return Trajectory(name="cloth_fold", keyframes=keyframes, grasps=grasps)


# A plan's joints are goals in degrees (grippers 0..100); `to_fraction(arm, joint, value)` turns one
# into a fraction of that arm's range, as the hands hold it.
ToFraction = Callable[[str, str, float], float]


def performed(
    plan: Mapping[str, Any],
    to_fraction: ToFraction,
    side_to_arm: Mapping[Side, str],
    side_to_follower: Mapping[Side, str],
    lead_s: float = 1.0,
) -> Trajectory:
    """A task plan (`FoldPlan.to_json()`: per side, [t_s, joints] keyframes and grasp windows) for the hands.

    The hands first take `lead_s` to reach the plan's first pose from wherever they are; every time of
    the plan is shifted by it.

    Raises:
        ValueError: a side, joint or time the plan cannot mean.
    """
    keyframes, grasps = {}, {}
    for side_name, frames in dict(plan.get("keyframes", {})).items():
        side = Side(side_name)
        arm = side_to_arm[side]
        converted = [Keyframe(0.0, _HERE)]
        for t_s, joints in frames:
            missing = [j for j in JOINT_NAMES if j not in joints]
            if missing or float(t_s) < 0:
                raise ValueError(
                    f"plan keyframe of {side_name} at t={t_s}: needs t >= 0 and joints {list(JOINT_NAMES)}"
                )
            pose: Pose = {j: to_fraction(arm, j, float(joints[j])) for j in JOINT_NAMES}
            converted.append(Keyframe(float(t_s) + lead_s, pose))
        keyframes[arm] = tuple(converted)
    for side_name, windows in dict(plan.get("grasps", {})).items():
        follower = side_to_follower[Side(side_name)]
        grasps[follower] = tuple((float(a) + lead_s, float(b) + lead_s) for a, b in windows)
    return Trajectory(name="fold_task", keyframes=keyframes, grasps=grasps)
