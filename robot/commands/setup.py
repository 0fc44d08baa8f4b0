"""so101-setup: give each motor of an arm its ID and baud rate (new motors all answer as ID 1).

    so101-setup --config_path=my_rig.yaml --arms=left_follower     # one arm: connect one motor at a time
    so101-setup --config_path=my_rig.yaml                          # all four arms in turn
    so101-setup --rig.virtual.factory_new=true                      # the virtual rig's brand-new motors

For each arm, gripper first, the command asks you to connect only one motor to the arm's controller
board, checks that exactly one motor answers (at any baud rate), and gives it its ID (gripper 6 ...
shoulder_pan 1) at 1 Mbps with LeRobot's `setup_motor`. Then you connect the whole daisy chain and it
checks that ids 1-6 answer, each once. An arm that already answers as ids 1-6 is left alone. The
arm's port comes from the rig file: find it first with so101-ports. Then calibrate: so101-calibrate.
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
from robot.setup.motors import MotorCue, setup_arm
from robot.shell.files import config_path_arg
from robot.signals import StopSignals
from robot.virtual.setup_operator import VirtualHands, VirtualMotorCue


@dataclass(frozen=True)
class SetupConfig:
    """Options of so101-setup (the rig comes from --config_path)."""

    rig: RigConfig = field(default_factory=RigConfig)
    # Arms to set up: all, followers, leaders, or names (left_follower,left_leader); one at a time, in order
    arms: str = "all"


class ConsoleMotorCue:
    """A person at the arm: connects the motor named, presses Enter."""

    def __init__(self, console: Console, arm: str) -> None:
        self.console = console
        self.arm = arm

    def connect_only(self, joint: str) -> None:
        """Ask for one motor on the cable."""
        self.console.print(
            f"[bold]{self.arm}[/bold]: connect the controller board to the [bold]{joint}[/bold] motor only"
            " (one cable, nothing daisy-chained after it), then press Enter."
        )
        input()

    def connect_all(self) -> None:
        """Ask for the whole chain."""
        self.console.print(
            f"[bold]{self.arm}[/bold]: every motor is set. Connect the whole daisy chain again"
            " (board -> shoulder_pan -> ... -> gripper), then press Enter."
        )
        input()


def main(argv: list[str] | None = None) -> int:
    """Entry point of so101-setup."""
    stops = StopSignals()

    def body() -> int:
        config = parse_command(SetupConfig, argv)
        rig = config.rig
        names = select_arms(rig, config.arms)
        console = Console()
        if not rig.is_virtual and not sys.stdin.isatty():
            raise ConfigError(
                "so101-setup asks you to connect one motor at a time, and there is no terminal to ask on."
                " Next: run it in a terminal: so101-setup --config_path=<rig file> --arms=left_follower"
            )
        with rig_ports(rig) as found:
            client = found.client() if found.control else None
            for name in names:
                cue: MotorCue = ConsoleMotorCue(console, name)
                if client is not None:
                    VirtualHands(client, found.ports).plug_in(name)  # its adapter, if still in the box
                    cue = VirtualMotorCue(client, name)
                side, role = Side(name.split("_")[0]), Role(name.split("_")[1])
                arm = SO101Arm(side, role, found.ports[name], rig_id=rig.id, calibration=rig.calibration, bus=rig.bus)
                bus = arm.open_for_setup()
                try:
                    setup_arm(arm.ref, bus, cue, say=lambda line, n=name: console.print(f"  {n} {line}", markup=False))
                finally:
                    with stops.finishing():
                        arm.disconnect(release_torque=False)  # setup never turns torque on
                console.print(f"{name}: motors 1-6 answer at 1 Mbps", markup=False)
            if client is not None:
                client.close()
        arms = ",".join(names)
        print(f"Next: so101-calibrate --arms={arms}" + _config_flag(argv))  # unwrapped: it pastes
        return 0

    return run_command(body, stops, argv)


def _config_flag(argv: list[str] | None) -> str:
    """The --config_path the command was given, to repeat in the next step."""
    path = config_path_arg(sys.argv[1:] if argv is None else argv)
    return f" --config_path={path}" if path else ""


if __name__ == "__main__":
    sys.exit(main())
