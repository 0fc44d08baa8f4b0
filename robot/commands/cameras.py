"""so101-cameras: find the cameras, show a picture of each on one sheet, and write which is which into the rig file.

    so101-cameras --config_path=my_rig.yaml                    # list them and write the contact sheet
    so101-cameras --config_path=my_rig.yaml --roles=left_wrist=2,right_wrist=0,overhead=1 --write=true
    so101-cameras                                              # the virtual rig's cameras, rendered

Each camera is listed with its /dev/v4l/by-path and /dev/v4l/by-id names and the modes it offers
(format, size, rate), and gets a numbered tile on the contact sheet, a PNG to open. Give each role
(left_wrist, right_wrist, overhead) its number with --roles, or answer the prompt at a terminal;
--write=true then replaces the rig file's `cameras:` section and keeps every other line. An entry
keeps what the file said for its role (size, rate, exposure, ...) with the new device; a new one is
640x480 MJPG at the rig's fps. Identical cameras without a serial number share one by-id name:
those are written by-path (keep each in its USB socket, or name them with so101-udev). Nothing on
the arms is touched. A new rig file: cp hardware_configs/so101_bimanual.yaml my_rig.yaml.
"""

import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

from robot.cli import UsageError, parse_command, run_command
from robot.config import RigConfig
from robot.setup.camera_modes import modes_summary
from robot.setup.camera_roles import parse_roles, prompt_roles, rig_camera_entries
from robot.setup.cameras import FoundCamera, cameras_to_choose
from robot.setup.contact_sheet import take_snapshots, write_contact_sheet
from robot.setup.rig_file import section_text, write_rig_section
from robot.shell.files import config_path_arg
from robot.signals import StopSignals

DEFAULT_CONTACT_SHEET = Path(tempfile.gettempdir()) / "so101-cameras.png"


@dataclass(frozen=True)
class CamerasConfig:
    """Options of so101-cameras (the rig comes from --config_path)."""

    rig: RigConfig = field(default_factory=RigConfig)
    # The contact sheet to write: a PNG with each camera's picture and number; default <tmp>/so101-cameras.png
    contact_sheet: Path | None = None
    # Each role's camera number from the contact sheet: left_wrist=2,right_wrist=0,overhead=1 (a role left out:
    # no camera); empty: asked at a terminal
    roles: str = ""
    # Write the chosen cameras into the --config_path rig file (its `cameras:` section; other lines stay)
    write: bool = False
    # Where /sys and /dev are read (tests give a fake tree)
    system_root: Path = Path("/")


def _table(cameras: list[FoundCamera]) -> Table:
    table = Table(title="cameras (the numbers are on the contact sheet)")
    for column in ("#", "device", "by-path", "by-id", "modes", "rig file device"):
        table.add_column(column, overflow="fold")
    for camera in cameras:
        if camera.virtual is not None:
            virtual = camera.virtual
            mode = f"{virtual.width}x{virtual.height}@{virtual.fps:g}"
            table.add_row(str(camera.number), f"{camera.device}\n{camera.card}", "-", "-", mode, "(virtual)")
            continue
        by_id = ", ".join(camera.by_id) or "none"
        if camera.shares_by_id_with:
            by_id += f" (shared with {', '.join(str(n) for n in camera.shares_by_id_with)})"
        by_path = ", ".join(camera.by_path) or "none"
        device = f"{camera.device}\n{camera.card}"
        table.add_row(str(camera.number), device, by_path, by_id, modes_summary(camera.modes), camera.stable_device)
    return table


def _rig_to_write(config: CamerasConfig, args: list[str]) -> Path | None:
    """The rig file --write=true writes (None without it); refuses, before anything runs, what cannot work."""
    if not config.write:
        return None
    rig_path = config_path_arg(args)
    if rig_path is None:
        raise UsageError(
            "--write=true needs the rig file to write. Next: so101-cameras --config_path=my_rig.yaml "
            "--roles=left_wrist=2,right_wrist=0,overhead=1 --write=true"
        )
    if not config.roles and not sys.stdin.isatty():
        raise UsageError("--write=true needs --roles. Next: add --roles=left_wrist=2,right_wrist=0,overhead=1")
    return rig_path


def _show(console: Console, config: CamerasConfig, cameras: list[FoundCamera]) -> None:
    """The table, a note per camera without a stable name of its own, and the contact sheet."""
    console.print(_table(cameras))
    for camera in cameras:
        if camera.naming_note:
            console.print(f"camera {camera.number}: {camera.naming_note}")
    sheet = config.contact_sheet or DEFAULT_CONTACT_SHEET
    write_contact_sheet(sheet, take_snapshots(cameras, config.system_root))
    # soft_wrap: a long path stays one piece that pastes whole (rich would break it at the width)
    console.print(
        f"contact sheet: [bold]{sheet.resolve()}[/] (open it: each picture has its camera's number)", soft_wrap=True
    )


def _roles(console: Console, config: CamerasConfig, cameras: list[FoundCamera]) -> dict[str, int]:
    if config.roles:
        return parse_roles(config.roles, cameras)
    return prompt_roles(cameras, input, console.print) if sys.stdin.isatty() else {}


def _write(console: Console, entries: list[dict[str, object]], rig_path: Path | None, given: Path | None) -> None:
    """Show the new `cameras:` section and write it into `rig_path`; None: say how (`given`: --config_path)."""
    console.print(section_text("cameras", entries), markup=False, highlight=False, end="", soft_wrap=True)
    if rig_path is None:
        console.print(
            f"add --write=true (with --config_path) to write this into {given or 'the rig file'}", soft_wrap=True
        )
        return
    write_rig_section(rig_path, "cameras", entries)
    console.print(
        f"wrote `cameras:` into {rig_path} ({len(entries)} camera(s); its other lines are unchanged)", soft_wrap=True
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point of so101-cameras."""
    args = sys.argv[1:] if argv is None else argv

    def body() -> int:
        config = parse_command(CamerasConfig, args)
        rig_path = _rig_to_write(config, args)
        console = Console()
        cameras = cameras_to_choose(config.rig, config.system_root)
        _show(console, config, cameras)
        roles = _roles(console, config, cameras)
        if not roles:
            console.print("say which camera is which: --roles=left_wrist=N,right_wrist=N,overhead=N")
            return 0
        entries, notes = rig_camera_entries(roles, cameras, config.rig)
        for note in notes:
            console.print(f"note: {note}")
        _write(console, entries, rig_path, config_path_arg(args))
        return 0

    return run_command(body, StopSignals(), args)  # a signal unwinds as Ctrl-C does: exit 128+n


if __name__ == "__main__":
    sys.exit(main())
