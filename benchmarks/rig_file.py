"""A virtual rig file for a benchmark's commands: hardware_configs/virtual.yaml with its own folders."""

from pathlib import Path

import yaml

from robot.config import DEFAULT_RIG_FILE


def write_rig(
    work: Path, name: str, cameras: list[str] | None = None, size: tuple[int, int] | None = None, **virtual: object
) -> Path:
    """`work`/rig_`name`.yaml: calibrated arms, this run's folders, `cameras` (None: all three) at `size`
    (width, height; None: the file's 640x480), and these `virtual:` fields."""
    rig = yaml.safe_load(DEFAULT_RIG_FILE.read_text())
    rig["calibration"]["dir"] = str(work / "calibration")
    rig["virtual"] |= {"runtime_dir": str(work / f"run_{name}"), "calibrated": True, **virtual}
    if cameras is not None:
        rig["cameras"] = [camera for camera in rig["cameras"] if camera["name"] in cameras]
    for camera in rig["cameras"]:
        if size is not None:
            camera["width"], camera["height"] = size
    path = work / f"rig_{name}.yaml"
    path.write_text(yaml.safe_dump(rig, sort_keys=False))
    return path
