"""so101-demo's options, checked when parsed."""

from dataclasses import dataclass
from pathlib import Path

from robot.config_checks import non_finite_field
from robot.errors import ConfigError


@dataclass(frozen=True)
class DemoConfig:
    """Options of so101-demo."""

    # Where the demo keeps its rig, datasets, reports and logs; emptied at start (a new, empty or demo folder only)
    output_dir: Path = Path("outputs/demo")
    # Start from brand-new arms (adapters unplugged, every motor id 1): so101-ports and so101-setup run first
    from_the_box: bool = False
    # Seconds of teleoperation through so101-teleop (0 skips it)
    teleop_s: float = 6.0
    # Demonstrations to record, how long each one is and the reset between them, seconds (16 s holds the
    # virtual operator's whole task: clamp, fold, press, drag aside; robot/cameras/virtual/fold_task.py)
    num_episodes: int = 3
    episode_s: float = 16.0
    reset_s: float = 2.0
    # Also teleoperate through LeRobot's own lerobot-teleoperate for 5 s (shows the ports are LeRobot's)
    lerobot_teleop: bool = True
    # Training steps of the tiny ACT (lerobot-train, CPU): enough to show the plumbing, not to learn the task
    train_steps: int = 30
    # Policy rollouts to record with so101-deploy, and how long each one is, seconds
    num_rollouts: int = 2
    rollout_s: float = 6.0
    # The demo rig's camera size, pixels (the virtual rig's default is 640x480)
    camera_width: int = 320
    camera_height: int = 240

    def __post_init__(self) -> None:
        # A ConfigError: the command-line shell shows its text as the demo's one-line error, exit 2.
        bad = non_finite_field(self)
        if bad is not None:
            raise ConfigError(f"--{bad[0]}={bad[1]}: must be a finite number (not NaN or infinity)")
        for name in ("num_episodes", "train_steps", "num_rollouts"):
            if getattr(self, name) < 1:
                raise ConfigError(f"--{name}={getattr(self, name)}: must be at least 1")
        for name in ("episode_s", "rollout_s"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"--{name}={getattr(self, name)}: must be more than 0 seconds")
        if self.teleop_s < 0 or self.reset_s < 0:
            raise ConfigError("--teleop_s and --reset_s must be 0 or more seconds")
        if not (32 <= self.camera_width <= 1920 and 32 <= self.camera_height <= 1080):
            raise ConfigError("--camera_width/--camera_height: expected 32..1920 x 32..1080 pixels")
