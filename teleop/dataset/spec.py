"""What dataset to write and how: the one configuration of the dataset writer."""

from dataclasses import dataclass
from pathlib import Path

from robot.cameras.shape import CameraShape
from robot.errors import ConfigError
from teleop.dataset.features import CODEC_NAMES, ROBOT_TYPE


@dataclass(frozen=True)
class WriterSpec:
    """A dataset root and how episodes are written into it."""

    root: Path  # the dataset directory (LeRobot's `root`); created if missing
    repo_id: str  # LeRobot repo id, e.g. "me/fold_cloth"; names the dataset, no hub access
    fps: int  # frames per second of the control loop and of every video, Hz
    cameras: tuple[CameraShape, ...]  # (name, height px, width px) of each camera, in feature order
    vcodec: str = "libsvtav1"  # video encoder: "libsvtav1" (LeRobot's default, AV1) or "h264" (less CPU)
    resume: bool = False  # append to an existing dataset (created if missing); False refuses an existing one
    robot_type: str = ROBOT_TYPE  # stored in info.json; resuming checks it
    ring_s: float = 3.0  # frames the control side may run ahead of the writer, seconds of recording
    encoder_queue_frames: int = 8  # frames buffered per camera in front of each encoder thread
    nice: int = 5  # added to the writer process's nice value so encoding yields to the control loop
    reply_timeout_s: float = 120.0  # longest open or close waits for the writer process, s
    # Longest a save may take before the writer process is deemed hung and killed (the episode is then
    # not saved; the next open rolls it back), s. The session's final wait is derived from it.
    save_timeout_s: float = 120.0
    lock_timeout_s: float = 10.0  # how long open waits for another writer to release the dataset, s
    # Record LeRobot's `intervention` feature: each frame's `control.intervention` fact (a rollout a person
    # may correct). A dataset recorded with it is resumed only with it, and the other way round.
    intervention: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))
        object.__setattr__(self, "cameras", tuple(CameraShape(str(n), int(h), int(w)) for n, h, w in self.cameras))
        if self.fps <= 0:
            raise ConfigError(f"dataset fps={self.fps}: must be a positive number of frames per second")
        if self.vcodec not in CODEC_NAMES:
            raise ConfigError(f"dataset vcodec={self.vcodec!r}: allowed are {', '.join(sorted(CODEC_NAMES))}")
        names = [name for name, _, _ in self.cameras]
        if len(set(names)) != len(names):
            raise ConfigError(f"dataset cameras {names}: camera names must be unique")
        for name, height, width in self.cameras:
            if not name or "/" in name or height <= 0 or width <= 0:
                raise ConfigError(f"dataset camera {name!r} {height}x{width}: need a name without '/' and a size")
        if not self.repo_id or self.repo_id.count("/") > 1:
            raise ConfigError(f"dataset repo_id={self.repo_id!r}: expected 'user/name'")
        if self.ring_s <= 0 or self.encoder_queue_frames < 1:
            raise ConfigError(f"ring_s={self.ring_s}, encoder_queue_frames={self.encoder_queue_frames}: must be > 0")
        if not self.save_timeout_s > 0:
            raise ConfigError(f"dataset save_timeout_s={self.save_timeout_s}: must be > 0 seconds")

    @property
    def ring_frames(self) -> int:
        """Slots of the shared-memory frame ring."""
        return max(2, round(self.ring_s * self.fps))

    @property
    def camera_names(self) -> tuple[str, ...]:
        """Camera names in feature order."""
        return tuple(name for name, _, _ in self.cameras)
