"""Configuration of `so101-review`: frozen dataclasses parsed once at the entry point with draccus.

Binding to anything but a loopback address needs an access token: without one, the server refuses
to start. The token comes from `--server.access_token_file=<file>` (one line; keep it chmod 600), or
`--server.access_token` (which every user of the machine can read in `ps`: the command warns), else
the environment variable named by `--server.access_token_env` (SO101_REVIEW_TOKEN).
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from evaluation.config_checks import reject_non_finite
from evaluation.errors import ConfigError
from evaluation.view_map import view_map

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
MIN_TOKEN_CHARS = 16  # shorter access tokens are refused (guessable)
_HOST = re.compile(r"^[A-Za-z0-9.:\-]+$")  # a host name, IPv4 or IPv6 address (no brackets, no port)
TOKEN_HINT = 'python -c "import secrets; print(secrets.token_urlsafe(24))"'


def is_loopback(host: str) -> bool:
    """Whether a bind address only accepts connections from this machine."""
    name = host.strip().strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve to anything


@dataclass(frozen=True)
class ReviewDatasetConfig:
    """Which dataset to review."""

    root: Path | None = None  # LeRobot v3.0 dataset folder (the one holding meta/info.json); required
    dataset_id: str = ""  # name the dataset was judged under in the store (so101-judge's); "" uses the folder name
    # Which of the dataset's cameras stands for each of our views, e.g. overhead:top (as so101-judge's)
    views: str = ""

    def __post_init__(self) -> None:
        """Check the view map's syntax (its cameras are checked against the dataset when it opens)."""
        view_map(self.views)


@dataclass(frozen=True)
class ServerConfig:
    """Where the web app listens and who may use it."""

    host: str = "127.0.0.1"  # bind address; anything but loopback requires an access token
    port: int = 8765  # TCP port; 0 picks a free one
    access_token: str = ""  # shared secret for the page (?token=... once, then a cookie); visible in `ps`
    access_token_file: Path | None = None  # file holding the access token (one line): kept out of `ps` and history
    access_token_env: str = "SO101_REVIEW_TOKEN"  # environment variable read when neither of the above is set
    open_browser: bool = False  # open the page in the default browser after start (the URL is printed anyway)

    def __post_init__(self) -> None:
        """Validate the fields."""
        if not _HOST.match(self.host.strip()):
            raise ConfigError(
                f"server.host={self.host!r} is not a host name or address; use 127.0.0.1 (this machine only) or an "
                f"address of this machine (quote IPv6 wildcards: --server.host=\"'::'\")"
            )
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"server.port={self.port}; allowed: 0..65535 (0 picks a free port)")
        if self.access_token and self.access_token_file is not None:
            raise ConfigError(
                "server.access_token and server.access_token_file are both set; give the token once: "
                "--server.access_token_file=<file>"
            )

    def token(self) -> str:
        """The access token: the file's, else the field, else the environment variable's, else "".

        Raises:
            ConfigError: The token file cannot be read or is empty.
        """
        if self.access_token_file is not None:
            return read_token_file(self.access_token_file)
        return self.access_token or os.environ.get(self.access_token_env, "")


def read_token_file(path: Path) -> str:
    """The access token held in a file (its first line, surrounding whitespace removed).

    Raises:
        ConfigError: The file cannot be read, is empty, or holds more than one line.
    """
    try:
        text = path.expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read the access token file {path}: {e}; check --server.access_token_file") from e
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) != 1:
        raise ConfigError(
            f"the access token file {path} holds {len(lines)} non-empty lines; write the token alone: "
            f"{TOKEN_HINT} > {path} && chmod 600 {path}"
        )
    return lines[0]


def token_warnings(argv: list[str], server: ServerConfig) -> list[str]:
    """Warnings about how the access token was given: on the command line (readable in `ps`), or in a shared file."""
    out = []
    given = any(a == "--server.access_token" or a.startswith("--server.access_token=") for a in argv)
    if given and server.access_token:
        out.append(
            "the access token on the command line is visible to every user of this machine (ps, /proc) and in "
            "your shell history; use export SO101_REVIEW_TOKEN=... or --server.access_token_file=<file> instead"
        )
    path = server.access_token_file
    if path is not None and path.expanduser().exists() and path.expanduser().stat().st_mode & 0o077:
        out.append(f"the access token file {path} can be read by other users; run: chmod 600 {path}")
    return out


@dataclass(frozen=True)
class AuditConfig:
    """The reproducible random audit sample (a share of episodes checked by a person whatever the judge said)."""

    fraction: float = 0.1  # share of judged episodes in the sample (at least one), 0..1
    seed: int = 0  # changing it draws another sample; the same seed always draws the same episodes

    def __post_init__(self) -> None:
        """Validate the fields."""
        reject_non_finite(self, "audit")
        if not 0 < self.fraction <= 1:
            raise ConfigError(f"audit.fraction={self.fraction}; allowed: 0 < x <= 1 (0.1 is 10 %)")


@dataclass(frozen=True)
class ReviewCommandConfig:
    """so101-review: check judge scores against the videos and override them, in a local web page."""

    dataset: ReviewDatasetConfig = field(default_factory=ReviewDatasetConfig)
    store_path: Path | None = None  # evaluation store (SQLite); None: beside the dataset, <folder>.evaluation.sqlite
    reviewer: str = ""  # name recorded with every override made through this server; "" uses $USER (who started it)
    server: ServerConfig = field(default_factory=ServerConfig)
    audit: AuditConfig = field(default_factory=AuditConfig)
    # Print the dataset's health (each error and warning on one line, then a summary) and exit, with no
    # server: the check to run before lerobot-train. Exit 1 when there are errors.
    check: bool = False

    def __post_init__(self) -> None:
        """Validate the fields that span sections."""
        if self.dataset.root is None:
            raise ConfigError("dataset.root is required: pass --dataset.root=<LeRobot dataset folder>")

    def reviewer_name(self) -> str:
        """The reviewer: the field, else $USER (or $USERNAME).

        Raises:
            ConfigError: Neither is set.
        """
        name = (self.reviewer or os.environ.get("USER") or os.environ.get("USERNAME") or "").strip()
        if not name:
            raise ConfigError("no reviewer name: pass --reviewer=<your name> (it is recorded with every override)")
        return name


def check_bind(host: str, token: str) -> None:
    """Refuse an unsafe server setup.

    Raises:
        ConfigError: A non-loopback host without an access token, or a token too short to be secret.
    """
    if token and len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(
            f"the access token has {len(token)} characters; use at least {MIN_TOKEN_CHARS}, e.g. from {TOKEN_HINT}"
        )
    if not is_loopback(host) and not token:
        raise ConfigError(
            f"refusing to serve on {host}: it is reachable from other machines, and no access token is set. "
            f"Set one (export SO101_REVIEW_TOKEN=$({TOKEN_HINT})) or keep the default --server.host=127.0.0.1"
        )
