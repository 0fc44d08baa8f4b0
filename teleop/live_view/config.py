"""`--view.*`: the live view's options, the same in so101-teleop and so101-record."""

from dataclasses import dataclass

from robot.config_checks import reject_non_finite
from robot.errors import ConfigError


@dataclass(frozen=True)
class LiveViewConfig:
    """A browser page with the cameras and the joint traces while the loop runs; off by default."""

    # Serve the page (http://<host>:<port>/) while the session runs
    enabled: bool = False
    # Where it listens; 127.0.0.1 keeps it on this machine (reach it over SSH with -L 8765:127.0.0.1:8765)
    host: str = "127.0.0.1"
    # TCP port; 0 picks a free one (the command prints the address)
    port: int = 8765
    # How often the page's pictures and traces are refreshed, Hz; each refresh JPEG-encodes every camera
    refresh_fps: float = 10.0
    # How many seconds of joint traces the page shows
    history_s: float = 10.0

    def __post_init__(self) -> None:
        reject_non_finite(self, "view")
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"view.port={self.port}: expected 0 (any free port) to 65535")
        if not 0 < self.refresh_fps <= 30:
            raise ConfigError(f"view.refresh_fps={self.refresh_fps}: expected more than 0 and at most 30 Hz")
        if not 1 <= self.history_s <= 120:
            raise ConfigError(f"view.history_s={self.history_s}: expected 1 to 120 seconds")
