"""so101-doctor: a preflight that answers "will this session produce good data?".

    so101-doctor                                              # the virtual rig
    so101-doctor --config_path=hardware_configs/so101_bimanual.yaml
    so101-doctor --config_path=hardware_configs/so101_bimanual.yaml --json=true > doctor.json
    so101-doctor --dataset.vcodec=h264 --dataset.root=$HOME/datasets   # as so101-record will write

One row per check (serial permissions, brltty and ModemManager; port, motors, calibration, power
against the rig file's `power`, motor status, bus timing per arm; cameras; disk; video encoder and its
speed; real-time scheduling), each pass, warn or fail with the next step. Nothing on the arms is changed. Exit status
is 1 when any row fails.
"""

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

from robot.cli import parse_command, run_command
from robot.config import RigConfig
from robot.config_checks import reject_non_finite
from robot.doctor import CheckRow, Status, run_checks
from robot.errors import ConfigError
from robot.lerobot_edge import lerobot_home
from robot.rig_ports import rig_ports
from robot.shell.old_spellings import RIG_RATE
from robot.signals import StopSignals

_STYLE = {Status.PASS: "green", Status.WARN: "yellow", Status.FAIL: "bold red"}


DOCTOR_CODECS = ("libsvtav1", "h264")  # what so101-record writes


OLD_SPELLINGS = RIG_RATE  # --fps, now --rig.fps (robot/shell/old_spellings.py)


@dataclass(frozen=True)
class DoctorDatasetOptions:
    """The dataset the session will write, named as so101-record names it (`--dataset.root`, `--dataset.vcodec`)."""

    # Where datasets will be written, for the free-space check; default LeRobot's $HF_LEROBOT_HOME
    root: Path | None = None
    # The codec the session will record with: its encode speed is checked
    vcodec: str = "libsvtav1"

    def __post_init__(self) -> None:
        if self.vcodec not in DOCTOR_CODECS:
            raise ConfigError(f"dataset.vcodec={self.vcodec!r}: expected one of {', '.join(DOCTOR_CODECS)}")


@dataclass(frozen=True)
class DoctorConfig:
    """Options of so101-doctor (the rig comes from --config_path)."""

    rig: RigConfig = field(default_factory=RigConfig)
    dataset: DoctorDatasetOptions = field(default_factory=DoctorDatasetOptions)
    # Print the rows as JSON instead of a table
    json: bool = False

    def __post_init__(self) -> None:
        reject_non_finite(self, "")


def main(argv: list[str] | None = None) -> int:
    """Entry point of so101-doctor."""

    def body() -> int:
        config = parse_command(DoctorConfig, argv, old_spellings=OLD_SPELLINGS)
        console = Console(stderr=config.json)
        dataset_root = config.dataset.root or lerobot_home()
        with rig_ports(config.rig) as found:

            def show(row: CheckRow) -> None:
                if not config.json:
                    console.print(f"  checked {row.subject} {row.check}: [{_STYLE[row.status]}]{row.status}[/]")

            rows = run_checks(config.rig, found.ports, dataset_root, on_row=show, vcodec=config.dataset.vcodec)
        if config.json:
            print(json.dumps([row.as_dict() for row in rows], indent=2))
        else:
            table = Table(title=f"so101-doctor: {config.rig.id}" + (" (virtual rig)" if config.rig.is_virtual else ""))
            for column in ("subject", "check", "status", "detail", "next step"):
                table.add_column(column, overflow="fold")
            for row in rows:
                status = f"[{_STYLE[row.status]}]{row.status}[/]"
                table.add_row(row.subject, row.check, status, row.detail, row.next_step)
            console.print(table)
        failed = [row for row in rows if row.status is Status.FAIL]
        if failed and not config.json:
            console.print(f"[bold red]{len(failed)} check(s) failed[/]: fix them before recording")
        return 1 if failed else 0

    return run_command(body, StopSignals(), argv)  # a signal unwinds as Ctrl-C does: exit 128+n


if __name__ == "__main__":
    sys.exit(main())
