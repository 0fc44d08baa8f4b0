"""`so101-studio`'s options: the workspace, the web server (the review page's), and the control lease."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from evaluation.config_checks import reject_non_finite
from evaluation.errors import ConfigError
from evaluation.review.config import ServerConfig

DEFAULT_PORT = 8766  # beside so101-review's 8765: both may run at once


@dataclass(frozen=True)
class StudioConfig:
    """so101-studio: the whole workflow in one local web page, each action the command it shows."""

    # The folder the studio's datasets, replays and judge sheets go in (datasets/<name> under it)
    workspace: Path = Path("outputs/studio")
    # Name recorded with every override made through the Datasets pages; "" uses $USER
    reviewer: str = ""
    # Seconds the rig's job runs with no page in control (closed, crashed, network gone) before the
    # studio stops it as Ctrl-C does; a reload within it reattaches and changes nothing
    lapse_s: float = 10.0
    server: ServerConfig = field(default_factory=lambda: ServerConfig(port=DEFAULT_PORT))

    def __post_init__(self) -> None:
        reject_non_finite(self, "")
        if not 2.0 <= self.lapse_s <= 600.0:
            raise ConfigError(f"lapse_s={self.lapse_s}: expected 2 to 600 seconds")

    def reviewer_name(self) -> str:
        """The reviewer: the field, else $USER, else "studio"."""
        return (self.reviewer or os.environ.get("USER") or os.environ.get("USERNAME") or "studio").strip()
