"""Errors of so101-campaign; each message says what failed and the command that goes on."""

from evaluation.errors import EvaluationError


class CampaignError(EvaluationError):
    """The campaign cannot start or go on (a bad policy folder, a missing so101-deploy, changed checkpoints)."""


class ManifestError(CampaignError):
    """campaign.json is missing, unreadable, foreign or corrupt."""
