"""so101-calibrate: LeRobot's SO-101 calibration for the rig's four arms, real or virtual.

    so101-calibrate --config_path=hardware_configs/so101_bimanual.yaml
    so101-calibrate --config_path=hardware_configs/so101_bimanual.yaml --arms=left_follower,left_leader
    so101-calibrate                      # the virtual rig: its scripted operator moves the arms

Files are written where LeRobot's bimanual classes look for them (see hardware_configs/README.md),
so `lerobot-record` and `lerobot-teleoperate` use the same calibration. A previous file is kept
as `<name>.<date>.bak.json`. Ctrl-C, SIGTERM or SIGHUP stop it with the arm disconnected (exit 128+n).
"""

import select
import sys
from dataclasses import dataclass, field

from rich.console import Console
from rich.live import Live
from rich.table import Table

from robot.cli import parse_command, run_command
from robot.commands.arm_selection import select_arms
from robot.config import RigConfig
from robot.feetech.calibrate import RangeProgress, calibrate_arm
from robot.feetech.so101_arm import SO101Arm
from robot.joints import Role, Side
from robot.rig_ports import rig_ports
from robot.signals import StopSignals
from robot.virtual.calibration_operator import VirtualCalibrationOperator


@dataclass(frozen=True)
class CalibrateConfig:
    """Options of so101-calibrate (the rig comes from --config_path)."""

    rig: RigConfig = field(default_factory=RigConfig)
    # Arms to calibrate, comma-separated from left_follower, right_follower, left_leader, right_leader; or "all"
    arms: str = "all"

    def selected(self) -> list[str]:
        """The arm names to calibrate, in a fixed order."""
        return select_arms(self.rig, self.arms)


class ConsoleOperator:
    """A person at the arm and the keyboard."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def hold_middle(self, arm: SO101Arm) -> None:
        """Ask for the middle pose and wait for Enter."""
        self.console.print(
            f"\n[bold]{arm.ref}[/bold]: torque is off. Move every joint to the [bold]middle[/bold] of its"
            " range (gripper half open), hold it there, and press Enter."
        )
        input()

    def start_sweep(self, arm: SO101Arm) -> None:
        """Explain the sweep."""
        self.console.print(
            "Now move every joint except wrist_roll slowly from one end of its travel to the other."
            " Press Enter when done."
        )

    def sweep_done(self) -> bool:
        """True once Enter was pressed (non-blocking)."""
        ready, _, _ = select.select([sys.stdin], [], [], 0)
        return bool(ready) and sys.stdin.readline() is not None


def _progress_table(arm: str, progress: RangeProgress) -> Table:
    table = Table(title=f"{arm}: recording ranges")
    for column in ("joint", "min", "position", "max", "range"):
        table.add_column(column, justify="right" if column != "joint" else "left")
    for joint, position in progress.positions.items():
        low, high = progress.mins[joint], progress.maxes[joint]
        table.add_row(joint, str(low), str(position), str(high), str(high - low))
    return table


def main(argv: list[str] | None = None) -> int:
    """Entry point of so101-calibrate."""
    stops = StopSignals()  # a signal unwinds as Ctrl-C does: the arm in calibration is disconnected

    def body() -> int:
        config = parse_command(CalibrateConfig, argv)
        rig = config.rig
        console = Console()
        written = []
        with rig_ports(rig) as found:
            operator = VirtualCalibrationOperator(found.client()) if found.control else ConsoleOperator(console)
            for name in config.selected():
                side, role = Side(name.split("_")[0]), Role(name.split("_")[1])
                arm = SO101Arm(side, role, found.ports[name], rig_id=rig.id, calibration=rig.calibration, bus=rig.bus)
                arm.connect(require_calibration=False)
                try:
                    with Live(console=console, transient=True, auto_refresh=False) as live:

                        def show(progress: RangeProgress, arm_name: str = name) -> None:
                            live.update(_progress_table(arm_name, progress), refresh=True)

                        calibration = calibrate_arm(arm, operator, show)
                    arm.configure()
                finally:
                    with stops.finishing():  # a repeated SIGHUP must not cut the disconnect short
                        arm.disconnect()
                written.append((name, arm.calibration_file, calibration))
        summary = Table(title="calibration written")
        for column in ("arm", "joint", "homing_offset", "range_min", "range_max"):
            summary.add_column(column)
        for name, _, calibration in written:
            for joint, cal in calibration.items():
                summary.add_row(name, joint, str(cal.homing_offset), str(cal.range_min), str(cal.range_max))
        console.print(summary)
        for name, path, _ in written:
            console.print(f"{name}: {path}")
        return 0

    return run_command(body, stops, argv)


if __name__ == "__main__":
    sys.exit(main())
