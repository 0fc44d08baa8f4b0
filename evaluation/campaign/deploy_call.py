"""One block as a person would run it: so101-deploy in the foreground, with the campaign's flags.

    so101-deploy --policy.path=<checkpoint> --policy.blind_label=A
        --dataset.root=<campaign>/policy_A --dataset.repo_id=local/<campaign>_policy_A [--dataset.resume=true]
        --session.num_episodes=<episodes left in the block>
        [--live_scores.enabled=true --live_scores.operator=<name> --live_scores.criteria=[R1,R2,R3]]  (scored live)
        [--config_path=<rig file>] [--session.episode_s=..] [--session.reset_s=..] [--engine.kind=..]
        [--policy.device=..]

`--dataset.resume=true` only once the folder holds a dataset: so101-deploy refuses to resume a folder
that holds none. The child inherits the terminal (the status line, the keys). Ctrl-C reaches it
directly (the terminal signals the whole foreground group), so the campaign does not forward it:
a forwarded second SIGINT would be deploy's e-stop. While the child runs, the campaign only notes
SIGINT, SIGTERM and SIGHUP, lets the child finish its safe exit, and then ends with 128+n; a SIGTERM
sent to so101-campaign alone therefore ends the campaign after the block in progress.
"""

from __future__ import annotations

import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from evaluation.campaign.errors import CampaignError
from evaluation.config_checks import reject_non_finite
from evaluation.errors import ConfigError

ENGINE_KINDS = ("sync", "async", "rtc", "ensemble")  # so101-deploy's engines that run a local checkpoint
START_POSES = ("here", "demonstrations")  # so101-deploy's --start_pose
_HELD = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass(frozen=True)
class DeploySession:
    """Session options each block's deploy gets (its --session.*)."""

    episode_s: float | None = None  # longest rollout, seconds; None: deploy's own default
    reset_s: float | None = None  # time to reset the scene between episodes, seconds; None: deploy's own default

    def __post_init__(self) -> None:
        """Validate the fields."""
        reject_non_finite(self, "deploy.session")
        if (self.episode_s is not None and self.episode_s <= 0) or (self.reset_s is not None and self.reset_s < 0):
            raise ConfigError(f"deploy.session.episode_s={self.episode_s}, reset_s={self.reset_s}: need > 0 and >= 0")


@dataclass(frozen=True)
class DeployEngine:
    """The engine each block's deploy runs (its --engine.kind)."""

    kind: str = ""  # sync, async, rtc or ensemble; "": deploy's own default (remote: not in a campaign)


@dataclass(frozen=True)
class DeployPolicy:
    """Where each block's deploy runs the policy (its --policy.device)."""

    device: str = ""  # auto, cuda, cuda:<n>, mps or cpu; "": deploy's own default (auto)


@dataclass(frozen=True)
class DeployOptions:
    """What each block's deploy gets besides the campaign's own flags (the rig file holds the rest)."""

    config_path: Path | None = None  # so101-deploy's rig file (--config_path); None: the virtual rig
    session: DeploySession = field(default_factory=DeploySession)
    engine: DeployEngine = field(default_factory=DeployEngine)
    policy: DeployPolicy = field(default_factory=DeployPolicy)
    program: str = "so101-deploy"  # the command run per block (another install's, or a test double)
    start_pose: str = ""  # here or demonstrations (deploy's --start_pose); "": its default

    def __post_init__(self) -> None:
        """Validate the fields."""
        if self.engine.kind and self.engine.kind not in ENGINE_KINDS:
            raise ConfigError(f"deploy.engine.kind={self.engine.kind!r}; allowed: {list(ENGINE_KINDS)} (or empty)")
        if self.start_pose and self.start_pose not in START_POSES:
            raise ConfigError(f"deploy.start_pose={self.start_pose!r}; allowed: {list(START_POSES)} (or empty)")
        if not self.program.strip():
            raise ConfigError("deploy.program is empty: pass so101-deploy (the default) or another command")

    def flags(self) -> list[str]:
        """The pass-through flags, as so101-deploy spells them."""
        given = [
            ("--config_path", self.config_path),
            ("--session.episode_s", self.session.episode_s),
            ("--session.reset_s", self.session.reset_s),
            ("--engine.kind", self.engine.kind or None),
            ("--policy.device", self.policy.device or None),
            ("--start_pose", self.start_pose or None),
        ]
        return [f"{name}={value}" for name, value in given if value is not None]

    def command(self) -> list[str]:
        """The program as argv words; a bare name is looked up beside this Python first (its virtualenv).

        Raises:
            CampaignError: the program is not found.
        """
        words = shlex.split(self.program)
        beside = Path(sys.executable).parent / words[0]
        found = str(beside) if "/" not in words[0] and beside.exists() else shutil.which(words[0])
        if found is None:
            raise CampaignError(
                f"{words[0]} not found. Next: install this project (pip install -e .) in the environment you run "
                "so101-campaign from, or pass --deploy.program=<path to so101-deploy>"
            )
        return [found, *words[1:]]


@dataclass(frozen=True)
class BlockCall:
    """One block's so101-deploy flags."""

    checkpoint: str  # the label's checkpoint folder
    label: str  # blind label, e.g. "A"
    dataset_root: Path  # <campaign>/policy_A
    repo_id: str  # local/<campaign>_policy_A
    episodes: int  # episodes to record in this call
    operator: str  # who scores the rollouts with the keys; "": nobody (the virtual rig's truth scores them)
    criteria: tuple[str, ...]  # the rubric's criterion ids

    def args(self) -> list[str]:
        """The block's own flags (the pass-through flags go after them)."""
        resume = ["--dataset.resume=true"] if (self.dataset_root / "meta" / "info.json").exists() else []
        return [
            f"--policy.path={self.checkpoint}",
            f"--policy.blind_label={self.label}",
            f"--dataset.root={self.dataset_root}",
            f"--dataset.repo_id={self.repo_id}",
            *resume,
            f"--session.num_episodes={self.episodes}",
            *self._live_scores(),
        ]

    def _live_scores(self) -> list[str]:
        if not self.operator:
            return []
        criteria = ",".join(self.criteria)
        return [
            "--live_scores.enabled=true",
            f"--live_scores.operator={self.operator}",
            f"--live_scores.criteria=[{criteria}]",
        ]


@dataclass(frozen=True)
class DeployExit:
    """How a block's so101-deploy ended."""

    code: int  # its exit status (128+n when a signal ended it)
    signal: int | None = None  # a signal so101-campaign itself received meanwhile (it then ends too)


def run_deploy(argv: list[str]) -> DeployExit:
    """Run so101-deploy in the foreground (terminal inherited) and wait for it; blocks for the whole block."""
    with _noting_signals() as noted:
        code = subprocess.run(argv, check=False).returncode
    return DeployExit(128 - code if code < 0 else code, noted[0] if noted else None)


@contextmanager
def _noting_signals() -> Iterator[list[int]]:
    noted: list[int] = []
    previous = {s: signal.signal(s, lambda n, _frame: noted.append(n)) for s in _HELD}
    try:
        yield noted
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
