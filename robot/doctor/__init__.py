"""Preflight checks (so101-doctor): will this session produce good data?

Each check is a row (pass, warn or fail, with the next step). Nothing on the arms is changed: an
arm is opened for inspection, its motors identified, its calibration registers compared with the
files, its power, temperatures and bus timing measured; cameras are run for a few seconds. The
machine's rows say whether this user may open the serial ports and get real-time scheduling, and
whether brltty or ModemManager would take the arms' USB-serial adapters.
"""

from collections.abc import Callable
from pathlib import Path

from robot.config import RigConfig
from robot.doctor.arms import check_arm, file_calibrations
from robot.doctor.cameras import check_cameras
from robot.doctor.encode_speed import check_encode_speed
from robot.doctor.permissions import check_machine_permissions, check_realtime
from robot.doctor.rows import CheckRow, Status
from robot.doctor.system import check_disk, check_encoder

__all__ = ["CheckRow", "Status", "run_checks"]


def run_checks(
    rig: RigConfig,
    ports: dict[str, str],
    dataset_root: Path,
    on_row: Callable[[CheckRow], None] | None = None,
    *,
    vcodec: str = "libsvtav1",
) -> list[CheckRow]:
    """Every check, in table order; `on_row` sees each row as soon as it is known.

    `vcodec` is the recording's (so101-record's default): the encode-speed row encodes every
    camera's size with that codec at the rig's `fps`.
    """
    rows: list[CheckRow] = []

    def add(new: list[CheckRow]) -> None:
        for row in new:
            rows.append(row)
            if on_row:
                on_row(row)

    add(check_machine_permissions(rig))  # serial permissions, brltty, ModemManager: before the ports they explain
    files = file_calibrations(rig)
    for name, port in ports.items():
        add(check_arm(name, port, rig, files))
    add(check_cameras(rig.cameras, rig.sync))
    add([check_disk(dataset_root), check_encoder(), check_realtime(rig)])
    add([check_encode_speed([(c.height, c.width) for c in rig.cameras], rig.fps, vcodec)])
    return rows
