"""The virtual SO-101 arms' joint profiles, so their motors look like real ones after calibration.

Each joint is described by what LeRobot's calibration of a real arm records: the homing offset
(actual position at the calibration pose minus 2047) and the range of motion in the homed frame.
The emulator turns that into mechanical stops, so calibrating a virtual arm through LeRobot gives
values like a real SO-101's (e.g. a follower's shoulder_pan near 1600 with range ~760..3280).
Each arm gets a small seeded variation, so the four arms are not identical.
"""

import random
import zlib
from dataclasses import dataclass

from robot.joints import Role

HALF_TURN = 2047


@dataclass(frozen=True)
class JointProfile:
    """What a real arm's calibration file says about one joint, plus where it rests."""

    homing_offset: int  # actual - 2047 at the calibration ("middle") pose, steps
    range_min: int  # lower end of the range of motion in the homed frame, steps
    range_max: int  # upper end, steps
    rest_fraction: float  # power-on pose as a fraction of the range (0 = range_min)
    holding_load_permille: float = 0.0  # load to hold against gravity with torque on, 0.1 %


# Values in the style of published SO-101 calibration files.
FOLLOWER_PROFILE: dict[str, JointProfile] = {
    "shoulder_pan": JointProfile(1600, 760, 3280, 0.50),
    "shoulder_lift": JointProfile(-1210, 820, 3230, 0.04, holding_load_permille=180),
    "elbow_flex": JointProfile(1130, 870, 3090, 0.96, holding_load_permille=110),
    "wrist_flex": JointProfile(-480, 840, 3200, 0.62, holding_load_permille=40),
    "wrist_roll": JointProfile(40, 160, 4040, 0.50),
    "gripper": JointProfile(1390, 2010, 3510, 0.05),
}
LEADER_PROFILE: dict[str, JointProfile] = {
    "shoulder_pan": JointProfile(-1730, 720, 3330, 0.50),
    "shoulder_lift": JointProfile(920, 850, 3180, 0.04),
    "elbow_flex": JointProfile(-860, 900, 3060, 0.96),
    "wrist_flex": JointProfile(1310, 880, 3170, 0.62),
    "wrist_roll": JointProfile(-150, 120, 4000, 0.50),
    "gripper": JointProfile(610, 2040, 3240, 0.05),
}


def profile_for(role: Role) -> dict[str, JointProfile]:
    """The default joint profiles of a follower or a leader."""
    return FOLLOWER_PROFILE if role is Role.FOLLOWER else LEADER_PROFILE


def _varied(profile: JointProfile, rng: random.Random) -> JointProfile:
    jitter = rng.randint(-40, 40)
    return JointProfile(
        homing_offset=max(-2000, min(2000, profile.homing_offset + jitter)),
        range_min=profile.range_min + rng.randint(-25, 25),
        range_max=profile.range_max + rng.randint(-25, 25),
        rest_fraction=profile.rest_fraction,
        holding_load_permille=profile.holding_load_permille,
    )


def calibration_pose(profile: JointProfile) -> float:
    """The actual position a person holds the joint at when LeRobot asks for 'the middle'."""
    return float(profile.homing_offset + HALF_TURN)


def arm_profiles(arm: str, role: Role, seed: int) -> dict[str, JointProfile]:
    """This arm's profiles: the defaults with a variation seeded by the arm's name and `seed`."""
    rng = random.Random(zlib.crc32(arm.encode()) ^ seed)
    return {name: _varied(profile, rng) for name, profile in profile_for(role).items()}
