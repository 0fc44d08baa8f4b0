"""Where so101-demo writes everything, under one folder, and the rig file it writes there."""

from dataclasses import dataclass
from pathlib import Path

import yaml

from robot.config import DEFAULT_RIG_FILE

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
    judge_dry_run: Path  # so101-judge --dry-run's contact sheet, prompt and estimate
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


def write_demo_rig(paths: DemoPaths, width: int, height: int) -> Path:
    """The virtual rig file with the demo's folders and camera size, for every command of the demo."""
    rig = yaml.safe_load(DEFAULT_RIG_FILE.read_text())
    rig["calibration"]["dir"] = str(paths.out / "calibration")
    rig["virtual"]["runtime_dir"] = str(paths.out / "run")
    rig["virtual"]["state_dir"] = str(paths.out / "motor_flash")
    for camera in rig["cameras"]:
        camera["width"], camera["height"] = width, height
    header = f"# Written by so101-demo: {DEFAULT_RIG_FILE.name} with the demo's folders and {width}x{height} cameras.\n"
    paths.rig_file.write_text(header + yaml.safe_dump(rig, sort_keys=False))
    return paths.rig_file
