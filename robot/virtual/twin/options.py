"""so101-fit's options (the rig comes from --config_path)."""

from dataclasses import dataclass, field
from pathlib import Path

from robot.config import RigConfig
from robot.joint_units import JointUnits
from robot.shell.errors import UsageError


@dataclass(frozen=True)
class FitDataset:
    """The recording of the followers to fit to."""

    root: Path | None = None  # the dataset folder (LeRobot v3.0)
    episodes: tuple[int, ...] = ()  # e.g. 0-3 or 0,2,5 (robot/shell/lists.py); empty or all: every episode
    # The joints' units: auto (detected from the recording), degrees, or percent (LeRobot's -100..100 of range)
    units: JointUnits = JointUnits.AUTO


@dataclass(frozen=True)
class Validation:
    """The held-out episodes the fit is checked on."""

    episodes: tuple[int, ...] = ()  # default: the last of --dataset.episodes


@dataclass(frozen=True)
class FitCommandConfig:
    """Options of so101-fit (the rig comes from --config_path)."""

    rig: RigConfig = field(default_factory=RigConfig)
    dataset: FitDataset = field(default_factory=FitDataset)
    validate: Validation = field(default_factory=Validation)
    # Which dataset column is which rig joint: left or right (a single-arm recording), or a JSON object
    # of rig joint -> column; empty: the rig's own 12 names
    joint_map: str = ""
    # Store each fitted arm's table in the rig file's virtual.servo_table (needs --config_path)
    write: bool = False
    # Fit budget: model evaluations of each arm's stage (each joint's own stage gets a third)
    evaluations: int = 240
    output_dir: Path = Path("outputs/fit")  # the report (fit_report.json) and each arm's held-out plot

    def __post_init__(self) -> None:
        if self.dataset.root is None:
            raise UsageError("no recording: pass --dataset.root=<folder of a LeRobot recording of your followers>")
        if self.evaluations < 1:
            raise UsageError(f"evaluations={self.evaluations}: expected at least 1")
