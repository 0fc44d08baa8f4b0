"""so101-udev: udev rules that name the rig's four arm adapters and three cameras, and the command to install them.

    so101-udev --config_path=my_rig.yaml --rules_path=99-so101.rules
    so101-udev --config_path=my_rig.yaml > 99-so101.rules       # the rules on stdout, the notes on stderr
    so101-udev --config_path=my_rig.yaml --serial_group=uucp     # Arch and friends: the serial group is uucp

Reads the rig file's ports and cameras, follows each to its device, and writes one rule per device:
matched by the USB adapter's serial number (ATTRS{idVendor}, ATTRS{idProduct}, ATTRS{serial}), it
adds /dev/so101_<arm> or /dev/so101_cam_<camera> and lets the group read and write it. An adapter
without a serial number (some CH340s) is matched by its USB socket, with a line saying so and its
/dev/serial/by-path name. The install command is printed, never run: nothing here needs root. Then
come the rig file values to use once the rules are installed (/dev/so101_left_follower, ...).
Exit status 1 when a device of the rig file is missing (the line names it); the virtual rig has
nothing to install (exit 0).
"""

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from robot.cli import parse_command, run_command
from robot.config import DEFAULT_RIG_FILE, RigConfig
from robot.errors import ConfigError, RobotError
from robot.setup.udev import UdevPlan, install_command, rules_text, udev_plan
from robot.shell.files import config_path_arg
from robot.signals import StopSignals

_GROUP = re.compile(r"^[a-z_][a-z0-9_-]*$")


class RulesError(RobotError):
    """No rules could be made, or the rules file could not be written."""


@dataclass(frozen=True)
class UdevConfig:
    """Options of so101-udev (the rig comes from --config_path)."""

    rig: RigConfig = field(default_factory=RigConfig)
    # Write the rules to this file; default: print them on stdout (and the notes on stderr)
    rules_path: Path | None = None
    # The group that may use the arms' serial ports: dialout (Debian, Ubuntu, Fedora), uucp (Arch)
    serial_group: str = "dialout"
    # The group that may use the cameras
    camera_group: str = "video"
    # Where /sys and /dev are read (tests give a fake tree)
    system_root: Path = Path("/")

    def __post_init__(self) -> None:
        for name in ("serial_group", "camera_group"):
            value = getattr(self, name)
            if not _GROUP.match(value):
                raise ConfigError(f"{name}={value!r}: expected a group name such as dialout, plugdev or video")


def _after_install(plan: UdevPlan, rig_path: str) -> list[str]:
    """The rig file values to use once the rules are installed."""
    lines = [f"then set these in {rig_path}:"]
    if plan.ports:
        lines.append("ports:")
        lines += [f"  {arm}: {rule.link}" for arm, rule in plan.ports]
    if plan.cameras:
        lines.append("cameras: each camera's device:")
        lines += [f"  {name}: device: {rule.link}" for name, rule in plan.cameras]
    return lines


def _output(config: UdevConfig, plan: UdevPlan, rig_path: str, notes: TextIO) -> None:
    """The rules (to --rules_path, else stdout), the notes, the install command and the values to use after."""
    text = rules_text(plan, rig_path)
    if config.rules_path is None:
        sys.stdout.write(text)
        rules_file = "99-so101.rules"
        notes.write(f"save the rules above: so101-udev --config_path={rig_path} --rules_path={rules_file}\n")
    else:
        _write(config.rules_path, text)
        rules_file = str(config.rules_path)
        print(f"wrote {len(plan.rules)} rule(s) to {rules_file}")
    for rule in plan.rules:
        if rule.note:
            print(f"note: {rule.subject}: {rule.note}", file=notes)
    print(f"install them (this command does not): {install_command(rules_file)}", file=notes)
    print("\n".join(_after_install(plan, rig_path)), file=notes)


def main(argv: list[str] | None = None) -> int:
    """Entry point of so101-udev."""
    args = sys.argv[1:] if argv is None else argv

    def body() -> int:
        config = parse_command(UdevConfig, args)
        rig_path = str(config_path_arg(args) or DEFAULT_RIG_FILE)
        plan = udev_plan(config.rig, config.system_root, config.serial_group, config.camera_group)
        if not plan.rules and not plan.missing:
            print(f"nothing to install: {rig_path} names no USB serial adapter or USB camera (the virtual rig)")
            return 0
        notes = sys.stdout if config.rules_path is not None else sys.stderr  # stdout may be the rules file
        for line in plan.missing:
            print(f"missing: {line}", file=notes)
        if not plan.rules:
            raise RulesError(
                f"no device of {rig_path} was found, so there are no rules to write. Next: plug the arms "
                "and cameras in, then run so101-udev again"
            )
        _output(config, plan, rig_path, notes)
        return 1 if plan.missing else 0

    return run_command(body, StopSignals(), args)


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError as e:
        raise RulesError(f"cannot write {path}: {e.strerror or e}. Next: give another file with --rules_path") from None


if __name__ == "__main__":
    sys.exit(main())
