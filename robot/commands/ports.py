"""so101-ports: find which USB serial port is which arm, and write the ports into the rig file.

    so101-ports --config_path=my_rig.yaml                          # plug or pull each arm's cable when asked
    so101-ports --config_path=my_rig.yaml --write=true             # ... and write the four ports into my_rig.yaml
    so101-ports --config_path=my_rig.yaml --method=motion          # all plugged in: move each arm when asked

`replug` (the default, as lerobot-find-port): for each arm in turn, plug its USB cable in, or pull it
out if it is plugged in; the port that appeared or vanished is that arm's (a pulled one is asked back).
`motion`: every adapter plugged in and its motors set up (so101-setup); move one joint of the arm
named, and the port whose joints moved is that arm's. Ports are written as their stable
/dev/serial/by-id/ names where the system has them: /dev/ttyACM<n> numbers change across reboots.
"""

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from rich.console import Console

from robot.cli import parse_command, run_command
from robot.commands.arm_selection import select_arms
from robot.config import RigConfig
from robot.config_checks import reject_non_finite
from robot.errors import ConfigError
from robot.feetech.so101_arm import SO101Arm
from robot.joints import Role, Side
from robot.rig_ports import FoundPorts, rig_ports
from robot.setup.ports import find_by_replug, identify_by_motion, list_serial_ports
from robot.setup.rig_file import write_rig_section
from robot.shell.files import config_path_arg
from robot.signals import StopSignals
from robot.virtual.setup_operator import VirtualHands


class PortMethod(StrEnum):
    """How an arm's port is told apart."""

    REPLUG = "replug"  # plug or pull the arm's USB cable
    MOTION = "motion"  # move the arm


@dataclass(frozen=True)
class PortsConfig:
    """Options of so101-ports (the rig comes from --config_path)."""

    rig: RigConfig = field(default_factory=RigConfig)
    # Arms to find: all, followers, leaders, or names (left_follower,left_leader)
    arms: str = "all"
    # replug: plug or pull each arm's cable when asked; motion: move each arm when asked (all plugged in)
    method: PortMethod = PortMethod.REPLUG
    # Write the ports found into the rig file given by --config_path (its other lines are kept)
    write: bool = False
    # How long to wait for a cable or an arm to move after asking, s
    timeout_s: float = 20.0

    def __post_init__(self) -> None:
        reject_non_finite(self, "")
        if not self.timeout_s > 0:
            raise ConfigError(f"timeout_s={self.timeout_s}: must be more than 0 seconds")


def _ask(console: Console, what: str) -> Callable[[str], None]:
    def cue(arm: str) -> None:
        console.print(f"[bold]{arm}[/bold]: {what}, then press Enter.")
        input()

    return cue


def _virtual_listing(found: FoundPorts) -> Callable[[], set[str]]:
    links = set(found.ports.values())
    return lambda: {link for link in links if Path(link).exists()}


def _raw_positions(arm: SO101Arm) -> Callable[[], dict[str, int]]:
    bus = arm.open_for_setup()
    return lambda: {joint: int(value) for joint, value in bus.sync_read("Present_Position", normalize=False).items()}


def main(argv: list[str] | None = None) -> int:
    """Entry point of so101-ports."""
    stops = StopSignals()

    def body() -> int:
        config = parse_command(PortsConfig, argv)
        rig = config.rig
        names = select_arms(rig, config.arms)
        target = config_path_arg(sys.argv[1:] if argv is None else argv)
        if config.write and target is None:
            raise ConfigError(
                "--write=true writes the ports into the rig file, and none was given."
                " Next: so101-ports --config_path=<rig file> --write=true"
            )
        if not rig.is_virtual and not sys.stdin.isatty():
            raise ConfigError(
                "so101-ports asks you to plug cables or move arms, and there is no terminal to ask on."
                " Next: run it in a terminal: so101-ports --config_path=<rig file>"
            )
        console = Console()
        found_ports: dict[str, str] = {}
        with rig_ports(rig) as found:
            hands = VirtualHands(found.client(), found.ports) if found.control else None
            if config.method is PortMethod.REPLUG:
                listing = _virtual_listing(found) if hands else list_serial_ports
                cue = (
                    hands.plug_or_unplug
                    if hands
                    else _ask(console, "plug its USB cable in (or pull it out if it is in)")
                )
                for name in names:
                    found_ports[name] = find_by_replug(name, listing, cue, config.timeout_s)
                    console.print(f"{name}: {found_ports[name]}", markup=False)
            else:
                found_ports = _by_motion(rig, names, found, hands, console, config.timeout_s, stops)
        if config.write and target is not None:
            ports = {**rig.ports.by_arm(), **found_ports}
            write_rig_section(target, "ports", ports)
            console.print(f"wrote the ports into {target}", markup=False)
            print(f"Next: so101-setup --config_path={target}")  # unwrapped: it pastes
        return 0

    return run_command(body, stops, argv)


def _by_motion(
    rig: RigConfig,
    names: list[str],
    found: FoundPorts,
    hands: VirtualHands | None,
    console: Console,
    timeout_s: float,
    stops: StopSignals,
) -> dict[str, str]:
    """Every candidate port opened (raw positions, nothing written); each arm found by its motion."""
    candidates = sorted(set(found.ports.values())) if hands else sorted(list_serial_ports())
    arms = []
    readers = {}
    try:
        for port in candidates:
            # Which arm it is, is what is being found out: the side and role here only name it in errors.
            arm = SO101Arm(Side.LEFT, Role.LEADER, port, rig_id=rig.id, calibration=rig.calibration, bus=rig.bus)
            arms.append(arm)
            readers[port] = _raw_positions(arm)
        result = {}
        for name in names:
            cue = hands.wiggle if hands else _ask(console, "move one joint by a few centimetres and hold it there")
            result[name] = identify_by_motion(name, readers, cue, timeout_s)
            if hands:
                hands.release(name)
            console.print(f"{name}: {result[name]}", markup=False)
            readers.pop(result[name])
        return result
    finally:
        with stops.finishing():
            for arm in arms:
                arm.disconnect(release_torque=False)


if __name__ == "__main__":
    sys.exit(main())
