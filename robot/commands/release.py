"""so101-release: let go of arms an e-stop left holding (torque off), after a person is ready to catch them.

    so101-release --config_path=hardware_configs/so101_bimanual.yaml           # both followers, asks first
    so101-release --config_path=hardware_configs/so101_bimanual.yaml --arms=left_follower --yes=true

An e-stop freezes the followers where they are with torque on, and they stay so after the command
ends: nothing moves until a person decides. Released, an SO-101 arm falls under its own weight, so
hold each arm (or rest it on the table) first. Exit status: 0 released, 1 failed, 2 usage, 130 Ctrl-C.
"""

import sys
from dataclasses import dataclass, field

from rich.console import Console

from robot.cli import parse_command, run_command
from robot.commands.arm_selection import select_arms
from robot.config import RigConfig
from robot.errors import ConfigError
from robot.feetech.so101_arm import SO101Arm
from robot.joints import Role, Side
from robot.rig_ports import rig_ports


@dataclass(frozen=True)
class ReleaseConfig:
    """Options of so101-release (the rig comes from --config_path)."""

    rig: RigConfig = field(default_factory=RigConfig)
    # Arms to release: followers, leaders, all, or comma-separated names (left_follower,right_follower)
    arms: str = "followers"
    # Release without asking (scripts); otherwise the command asks on the terminal first
    yes: bool = False


def main(argv: list[str] | None = None) -> int:
    """Entry point of so101-release."""

    def body() -> int:
        config = parse_command(ReleaseConfig, argv)
        names = select_arms(config.rig, config.arms)
        console = Console()
        if not config.yes:
            if not sys.stdin.isatty():
                raise ConfigError(
                    "so101-release asks before letting go, and there is no terminal to ask on."
                    " Next: hold the arms, then run it again with --yes=true"
                )
            console.print(f"Released, {', '.join(names)} fall under their own weight: hold them first.")
            if input("Release now? [y/N] ").strip().lower() not in ("y", "yes"):
                console.print("nothing released")
                return 0
        rig = config.rig
        with rig_ports(rig) as found:
            for name in names:
                side, role = Side(name.split("_")[0]), Role(name.split("_")[1])
                arm = SO101Arm(side, role, found.ports[name], rig_id=rig.id, calibration=rig.calibration, bus=rig.bus)
                arm.connect(require_calibration=False)  # opens and checks the motors; writes no goal
                arm.disconnect(release_torque=True)
                console.print(f"{name}: torque off")
        return 0

    return run_command(body, args=argv)


if __name__ == "__main__":
    sys.exit(main())
