"""LeRobot's own bimanual SO follower and leader, connected to a rig's four ports (for the anchors)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lerobot.robots.bi_so_follower import BiSOFollower
    from lerobot.teleoperators.bi_so_leader import BiSOLeader


@contextlib.contextmanager
def connected_lerobot_arms(
    rig_id: str, calibration_dir: Path, ports: Mapping[str, str]
) -> Iterator[tuple[BiSOFollower, BiSOLeader]]:
    """LeRobot's BiSOFollower and BiSOLeader on `ports`, calibrated from `calibration_dir`'s files."""
    from lerobot.robots.bi_so_follower import BiSOFollower, BiSOFollowerConfig
    from lerobot.robots.so_follower import SOFollowerConfig
    from lerobot.teleoperators.bi_so_leader import BiSOLeader, BiSOLeaderConfig
    from lerobot.teleoperators.so_leader import SOLeaderConfig

    follower = BiSOFollower(
        BiSOFollowerConfig(
            id=rig_id,
            calibration_dir=calibration_dir / "robots" / "so_follower",
            left_arm_config=SOFollowerConfig(port=ports["left_follower"]),
            right_arm_config=SOFollowerConfig(port=ports["right_follower"]),
        )
    )
    leader = BiSOLeader(
        BiSOLeaderConfig(
            id=rig_id,
            calibration_dir=calibration_dir / "teleoperators" / "so_leader",
            left_arm_config=SOLeaderConfig(port=ports["left_leader"]),
            right_arm_config=SOLeaderConfig(port=ports["right_leader"]),
        )
    )
    with contextlib.ExitStack() as stack:
        for device in (follower, leader):
            device.connect(calibrate=False)  # calibrate=True would prompt with input() on a mismatch
            stack.callback(device.disconnect)
            if not device.is_calibrated:
                raise RuntimeError(f"LeRobot's {device.name} disagrees with its calibration files; cannot benchmark")
        yield follower, leader
