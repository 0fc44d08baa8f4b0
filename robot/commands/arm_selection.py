"""`--arms=...`: which of the rig's arms a command works on (so101-calibrate, so101-release)."""

from robot.cli import UsageError
from robot.config import RigConfig
from robot.joints import ARM_NAMES, Role
from robot.shell.lists import split_list


def select_arms(rig: RigConfig, arms: str) -> list[str]:
    """Arm names from `arms` ("all", "followers", "leaders", or a list of names: a,b or [a,b]), in a fixed order.

    Raises:
        UsageError: an unknown name, or an arm the rig file has no port for (exit 2: nothing ran).
    """
    present = rig.ports.by_arm()
    groups = {"all": ARM_NAMES, "followers": tuple(a for a in ARM_NAMES if a.endswith(Role.FOLLOWER))}
    groups["leaders"] = tuple(a for a in ARM_NAMES if a.endswith(Role.LEADER))
    if arms in groups:
        return [a for a in groups[arms] if a in present]
    wanted = split_list(arms)  # the list syntax of every command (robot/shell/lists.py)
    unknown = [a for a in wanted if a not in ARM_NAMES]
    if unknown:
        raise UsageError(
            f"arms={arms!r}: unknown {', '.join(unknown)}; expected all, followers, leaders or names from {ARM_NAMES}."
            " Next: --arms=followers, or name them, e.g. --arms=left_follower,left_leader"
        )
    absent = [a for a in wanted if a not in present]
    if absent:
        raise UsageError(
            f"arms={arms!r}: the rig file has no port for {', '.join(absent)}. Next: add it under `ports:` in the"
            " rig file, or leave it out of --arms (--arms=all: every arm the rig file has a port for)"
        )
    return [a for a in ARM_NAMES if a in wanted]
