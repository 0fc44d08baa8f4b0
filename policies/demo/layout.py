"""Where so101-demo writes everything, under one folder, and the rig file it writes there."""

from dataclasses import dataclass
from pathlib import Path

import yaml

from robot.cli import UsageError
from robot.config import DEFAULT_RIG_FILE

# Written into the demo's folder when it is made: the demo wipes a folder at start only if it is
# empty or has this file (or the rig file an older demo wrote), never someone else's files.
MARKER = ".so101-demo"
_RIG_HEADER = "# Written by so101-demo"
DEMO_REPO_ID = "demo/fold_cloth"
EVAL_REPO_ID = "demo/eval_tiny_act"


@dataclass(frozen=True)
class DemoPaths:
    """Everything the demo writes, under one folder."""

    out: Path  # the demo's folder
    rig_file: Path  # the demo's rig YAML
    demonstrations: Path  # the recorded LeRobot dataset
    rollouts: Path  # the evaluation dataset so101-deploy records
    replay_report: Path  # so101-replay's report folder
    training: Path  # lerobot-train's output folder
    checkpoint: Path  # the trained policy, as lerobot-train saves it
    judge_dry_run: Path  # so101-judge --dry_run=true: its contact sheet, prompt and estimate
    report: Path  # so101-report's folder
    logs: Path  # logs of the long-running tools

    @classmethod
    def under(cls, out: Path) -> "DemoPaths":
        """The demo's layout below `out`."""
        training = out / "train" / "tiny_act"
        return cls(
            out=out,
            rig_file=out / "rig.yaml",
            demonstrations=out / "datasets" / "fold_cloth",
            rollouts=out / "datasets" / "eval_tiny_act",
            replay_report=out / "replay",
            training=training,
            checkpoint=training / "checkpoints" / "last" / "pretrained_model",
            judge_dry_run=out / "judge_dry_run",
            report=out / "report",
            logs=out / "logs",
        )


def check_output_dir(out: Path) -> None:
    """Refuse a folder the demo would wipe although it did not make it.

    Raises:
        UsageError: `out` is a file, or a non-empty folder without the demo's marker.
    """
    out = out.expanduser()
    if out.exists() and not out.is_dir():
        raise UsageError(f"--output_dir={out} is a file. Next: pass a new folder, e.g. --output_dir=outputs/demo")
    if not out.is_dir() or (out / MARKER).is_file() or not any(out.iterdir()):
        return
    rig = out / "rig.yaml"
    if rig.is_file() and rig.read_text(errors="replace").startswith(_RIG_HEADER):
        return  # a demo folder from before the marker
    raise UsageError(
        f"--output_dir={out} holds files so101-demo did not write, and the demo starts by emptying its folder;"
        " nothing was deleted. Next: pass a new or empty folder, e.g. --output_dir=outputs/demo"
    )


def write_demo_rig(paths: DemoPaths, width: int, height: int, *, factory_new: bool = False) -> Path:
    """The virtual rig file with the demo's folders and camera size, for every command of the demo.

    `factory_new`: the arms as they come out of the box (so101-ports and so101-setup come first).
    """
    rig = yaml.safe_load(DEFAULT_RIG_FILE.read_text())
    rig["virtual"]["factory_new"] = factory_new
    rig["calibration"]["dir"] = str(paths.out / "calibration")
    rig["virtual"]["runtime_dir"] = str(paths.out / "run")
    rig["virtual"]["state_dir"] = str(paths.out / "motor_flash")
    for camera in rig["cameras"]:
        camera["width"], camera["height"] = width, height
    header = f"# Written by so101-demo: {DEFAULT_RIG_FILE.name} with the demo's folders and {width}x{height} cameras.\n"
    paths.rig_file.write_text(header + yaml.safe_dump(rig, sort_keys=False))
    return paths.rig_file
