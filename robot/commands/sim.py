r"""so101-sim: serve the virtual rig's four arms on pseudo-terminals until Ctrl-C.

    so101-sim
    so101-sim --config_path=hardware_configs/virtual.yaml --rig.virtual.timing=usb --virtual_operator=cloth_fold
    so101-sim --json=true      # one JSON line with the ports, for scripts

Other commands pointed at the same rig file use this rig instead of starting their own; so do
LeRobot's own scripts, given the printed ports, for example:

    lerobot-teleoperate --robot.type=bi_so_follower \\
        --robot.left_arm_config.port=$XDG_RUNTIME_DIR/so101-virtual/left_follower \\
        --robot.right_arm_config.port=$XDG_RUNTIME_DIR/so101-virtual/right_follower \\
        --teleop.type=bi_so_leader ...
"""

import json
import sys
from dataclasses import dataclass, field, replace

from rich.console import Console
from rich.table import Table

from robot.cli import parse_command, run_command
from robot.config import RigConfig
from robot.errors import ConfigError
from robot.shell.say import say_error
from robot.virtual.client import VirtualRigClient
from robot.virtual.config import VirtualOperator, default_runtime_dir
from robot.virtual.server import serve


@dataclass(frozen=True)
class SimConfig:
    """Options of so101-sim (the rig comes from --config_path)."""

    rig: RigConfig = field(default_factory=RigConfig)
    # What the scripted operator does at start: idle, or the cloth-fold demonstration looped on the leaders
    virtual_operator: VirtualOperator = VirtualOperator.IDLE
    # Print only the machine-readable READY line (JSON) instead of the table
    json: bool = False


def _announce(config: SimConfig, console: Console):
    def announce(line: str) -> None:
        message = json.loads(line)
        if message.get("ready") and config.virtual_operator != VirtualOperator.IDLE:
            with VirtualRigClient(message["control"]) as client:
                client.play(config.virtual_operator, loop=True)
        if config.json:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
            return
        if not message.get("ready"):
            say_error(f"the virtual rig did not start: {message.get('error')}")
            return
        table = Table(title="virtual SO-101 rig: ports (LeRobot's scripts can use them too)")
        table.add_column("arm")
        table.add_column("port")
        for arm, port in message["ports"].items():
            table.add_row(arm, port)
        console.print(table)
        console.print(f"control socket: {message['control']}")
        if config.virtual_operator != VirtualOperator.IDLE:
            console.print(f"scripted operator: playing {config.virtual_operator} in a loop")
        console.print("serving; Ctrl-C to stop")

    return announce


def main(argv: list[str] | None = None) -> int:
    """Entry point of so101-sim."""

    def body() -> int:
        config = parse_command(SimConfig, argv)
        if config.rig.virtual is None:
            raise ConfigError(
                "so101-sim needs a rig file with a `virtual:` section, e.g. hardware_configs/virtual.yaml"
            )
        virtual = config.rig.virtual
        virtual = replace(virtual, runtime_dir=virtual.runtime_dir or default_runtime_dir())
        serve(virtual, announce=_announce(config, Console(stderr=config.json)))
        return 0

    return run_command(body, args=argv)


if __name__ == "__main__":
    sys.exit(main())
