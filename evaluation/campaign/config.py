"""Options of so101-campaign: the policies, the campaign's plan and rule, who scores, and what deploy gets."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

import yaml

from evaluation.campaign.deploy_call import DeployOptions
from evaluation.campaign.order import MAX_LABELS
from evaluation.campaign.stopping import DEFAULT_MIN_EPISODES
from evaluation.errors import ConfigError


class CampaignScorer(StrEnum):
    """Who scores each rollout of a campaign."""

    LIVE = "live"  # the operator, with the keys after each rollout (deploy's live scores)
    # The virtual rig's ground truth of each rollout (its quality card: robot/cameras/virtual/cloth_truth.py),
    # R1-R3 as continuous 0..1 values; nobody scores, so a campaign runs unattended
    TRUTH = "truth"


@dataclass(frozen=True)
class CampaignOptions:
    """The campaign folder, its plan and its stopping rule."""

    root: Path | None = None  # the campaign folder: a new one starts a campaign, one with campaign.json resumes it
    episodes_per_policy: int = 10  # target episodes per policy
    # With the stopping rule: the most episodes per policy; None: the target
    max_episodes_per_policy: int | None = None
    # Stop once the interval of the difference in mean total excludes 0 (two policies; looks after whole rounds)
    stop_when_significant: bool = False
    min_episodes_per_policy: int = DEFAULT_MIN_EPISODES  # scored episodes per policy before the rule may stop
    adjust_for_looks: bool = True  # split the 5 % over the planned looks (Bonferroni); false: 95 % at every look
    seed: int | None = None  # seed of the blind labels and the order; None: drawn at random (and stored)
    block: int = 1  # episodes per block: one so101-deploy call runs one policy this many times in a row
    scorer: CampaignScorer = CampaignScorer.LIVE  # live (the operator's keys) or truth (virtual rig only)

    def planned_episodes(self) -> int:
        """Episodes per policy the order is planned for (the maximum with the rule, else the target)."""
        if self.stop_when_significant and self.max_episodes_per_policy is not None:
            return self.max_episodes_per_policy
        return self.episodes_per_policy


@dataclass(frozen=True)
class LiveScoresOptions:
    """Who scores each rollout with the keys (deploy's --live_scores.operator)."""

    operator: str = ""  # the operator's name, stored with every score


@dataclass(frozen=True)
class CampaignCommandConfig:
    """so101-campaign: run checkpoints blind in a balanced seeded order, scored live, with an optional stopping rule."""

    policies: tuple[Path, ...] = ()  # checkpoint folders, e.g. [outputs/act/pretrained_model,...]; none: resume
    rubric_path: Path | None = None  # rubric YAML whose criteria the operator scores; None: the cloth-folding one
    campaign: CampaignOptions = field(default_factory=CampaignOptions)
    live_scores: LiveScoresOptions = field(default_factory=LiveScoresOptions)
    deploy: DeployOptions = field(default_factory=DeployOptions)  # passed on to every block's so101-deploy

    def __post_init__(self) -> None:
        """Validate the fields."""
        c = self.campaign
        if c.root is None:
            raise ConfigError(
                "campaign.root is required: pass --campaign.root=<folder> (a new folder starts a campaign; one "
                "holding campaign.json resumes it)"
            )
        if c.scorer == CampaignScorer.LIVE and not self.live_scores.operator.strip():
            raise ConfigError("live_scores.operator is empty: pass --live_scores.operator=<your name> (who scores)")
        if c.scorer == CampaignScorer.TRUTH and not _virtual(self.deploy.config_path):
            raise ConfigError(
                f"campaign.scorer=truth needs the virtual rig (only its cloth has a ground truth), and "
                f"{self.deploy.config_path} is a real one. Next: drop --deploy.config_path (the virtual rig) or "
                "score live: --campaign.scorer=live --live_scores.operator=<your name>"
            )
        if c.episodes_per_policy < 1 or c.block < 1 or c.min_episodes_per_policy < 2:
            raise ConfigError(
                f"campaign.episodes_per_policy={c.episodes_per_policy}, block={c.block} (each >= 1), "
                f"min_episodes_per_policy={c.min_episodes_per_policy} (>= 2)"
            )
        if c.max_episodes_per_policy is not None and not c.stop_when_significant:
            raise ConfigError(
                "campaign.max_episodes_per_policy applies with the stopping rule only: add "
                "--campaign.stop_when_significant=true, or drop it"
            )
        if c.planned_episodes() < c.episodes_per_policy:
            raise ConfigError(
                f"campaign.max_episodes_per_policy={c.max_episodes_per_policy} is below the target "
                f"campaign.episodes_per_policy={c.episodes_per_policy}"
            )
        if c.seed is not None and c.seed < 0:
            raise ConfigError(f"campaign.seed={c.seed}; allowed: an integer >= 0")
        if self.policies and not 2 <= len(self.policies) <= MAX_LABELS:
            raise ConfigError(f"--policies names {len(self.policies)} checkpoint(s); a campaign compares 2..26")
        if c.stop_when_significant and len(self.policies) > 2:
            raise ConfigError(
                f"campaign.stop_when_significant compares two policies; with {len(self.policies)} it is not defined. "
                "Next: drop it (the campaign runs to the target), then compare every pair: "
                "so101-report --campaign.root=<folder>"
            )


def _virtual(rig_file: Path | None) -> bool:
    """Whether so101-deploy runs on the virtual rig with this rig file (None: its default, the virtual one)."""
    if rig_file is None:
        return True
    try:
        rig = yaml.safe_load(Path(rig_file).read_text())
    except (OSError, yaml.YAMLError):
        return True  # so101-deploy reports the file's own problem, in its words
    return isinstance(rig, dict) and rig.get("virtual") is not None
