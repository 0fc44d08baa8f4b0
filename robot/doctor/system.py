"""The doctor's machine rows: disk space for datasets and a usable video encoder."""

import shutil
from pathlib import Path

from robot.doctor.rows import CheckRow, Status

MIN_FREE_GB, WARN_FREE_GB = 2.0, 10.0


def check_disk(folder: Path) -> CheckRow:
    """Free space where datasets go."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    free_gb = shutil.disk_usage(existing).free / 1e9
    detail = f"{free_gb:.1f} GB free at {existing}"
    if free_gb < MIN_FREE_GB:
        return CheckRow(
            "disk", "free space", Status.FAIL, detail, "free some space: a session of 50 episodes needs ~2 GB"
        )
    if free_gb < WARN_FREE_GB:
        return CheckRow("disk", "free space", Status.WARN, detail, "less than 10 GB left")
    return CheckRow("disk", "free space", Status.PASS, detail)


def check_encoder() -> CheckRow:
    """A video encoder LeRobot's writer can use (through PyAV)."""
    try:
        import av

        codecs = av.codecs_available
    except ImportError as e:
        return CheckRow("video", "encoder", Status.FAIL, f"PyAV missing: {e}", "reinstall: make setup")
    usable = [c for c in ("libsvtav1", "h264", "libx264") if c in codecs]
    if not usable:
        return CheckRow("video", "encoder", Status.FAIL, "no AV1 or H.264 encoder in PyAV", "reinstall av")
    return CheckRow("video", "encoder", Status.PASS, ", ".join(usable))
