"""A follower's safety at connect: its guard from its calibration, anchored where it is, and its rest pose."""

from collections.abc import Mapping
from dataclasses import dataclass

from robot.safety.config import SafetyConfig
from robot.safety.guard import ActionGuard
from robot.safety.limits import limits_from_calibration


@dataclass(frozen=True)
class ArmedFollower:
    """What connect sets up for one follower."""

    guard: ActionGuard
    rest_pose: dict[str, float]  # where the move to rest goes: the pose at connect, inside the limits


def arm_follower(
    arm: str,
    ranges: Mapping[str, tuple[int, int]],
    safety: SafetyConfig,
    positions: Mapping[str, float],
    *,
    ramp: bool,
) -> ArmedFollower:
    """The guard and rest pose of follower `arm`, calibrated `ranges` (encoder steps), read at `positions`.

    `ramp=False` skips the transition a new guard starts in (only for dry arms placed mid-recording).
    """
    limits = limits_from_calibration(
        ranges,
        margin_deg=safety.limit_margin_deg,
        gripper_margin_percent=safety.gripper_margin_percent,
    )
    guard = ActionGuard(arm, limits, safety, positions)
    # No time yet: the first command's interval is one period of the caller's clock (the loop's
    # clock may not be this one: a fast replay's is simulated).
    guard.reset(positions)
    if not ramp:
        guard.transition = None
    # LeRobot assumes an arm is in its rest pose at connect: that is where it goes back.
    return ArmedFollower(guard, {j: limits.clamp(j, v) for j, v in positions.items()})
