"""Start a campaign (draw the blind labels, plan the order, write campaign.json) or check one that resumes.

A new campaign shuffles the checkpoints onto the labels A, B, ... with its seed (so the order they are
typed in says nothing), plans the rounds (evaluation/campaign/order.py) and records each checkpoint's
content identity. A resumed one keeps everything campaign.json says; options given again must agree
with it, and each checkpoint must still have the content it had (a retrained checkpoint would mix two
policies under one label). No message here names a checkpoint once it has a label.
"""

from __future__ import annotations

import random
import re
import secrets
from collections.abc import Iterable
from pathlib import Path

from evaluation.campaign.config import CampaignCommandConfig, CampaignScorer
from evaluation.campaign.errors import CampaignError
from evaluation.campaign.identity import checkpoint_identity
from evaluation.campaign.manifest import CampaignPolicy, Manifest, manifest_path, read_manifest, write_manifest
from evaluation.campaign.order import blind_labels, plan_rounds
from evaluation.errors import ConfigError
from evaluation.rubric import load_rubric


def open_campaign(config: CampaignCommandConfig, given: Iterable[str]) -> tuple[Manifest, bool]:
    """The campaign's manifest, and whether it was just created.

    `given`: the option names on the command line (`--campaign.seed`, ...), checked against a stored campaign.

    Raises:
        CampaignError: no policies for a new campaign, an unusable checkpoint, a changed one, or options that
            disagree with campaign.json (ManifestError: campaign.json is unreadable).
    """
    root = _root(config)
    if manifest_path(root).exists():
        manifest = read_manifest(root)
        _check_same(config, manifest, set(given))
        return manifest, False
    if not config.policies:
        raise ConfigError(  # the command line names no campaign to resume, and none to start
            f"{root} holds no campaign.json. Next: start one with --policies=[<checkpoint>,<checkpoint>] "
            "(or pass the --campaign.root of the campaign to resume)"
        )
    manifest = new_manifest(config)
    write_manifest(root, manifest)
    return manifest, True


def new_manifest(config: CampaignCommandConfig) -> Manifest:
    """A new campaign's manifest: labels drawn, order planned, identities taken (nothing written)."""
    c = config.campaign
    seed = secrets.randbelow(2**31) if c.seed is None else c.seed
    folders = [Path(p).expanduser().resolve() for p in config.policies]
    identities = [checkpoint_identity(f) for f in folders]  # the user's own paths: errors may name them
    labels = blind_labels(len(folders))
    shuffled = random.Random(f"labels:{seed}").sample(range(len(folders)), len(folders))
    rubric = load_rubric(config.rubric_path)
    policies = tuple(
        CampaignPolicy(label, f"policy_{label}", str(folders[i]), identities[i])
        for label, i in zip(labels, shuffled, strict=True)
    )
    return Manifest(
        name=campaign_name(_root(config)),
        seed=seed,
        rubric=rubric.version,
        criteria=rubric.criterion_ids,
        policies=policies,
        rounds=plan_rounds(labels, c.planned_episodes(), c.block, seed),
        episodes_per_policy=c.episodes_per_policy,
        block=c.block,
        stop_when_significant=c.stop_when_significant,
        min_episodes_per_policy=c.min_episodes_per_policy,
        adjust_for_looks=c.adjust_for_looks,
        scorer=c.scorer.value,
        episodes_done=dict.fromkeys(labels, 0),
    )


def check_checkpoints(manifest: Manifest) -> None:
    """Each label's checkpoint still has the content it had when the campaign started.

    Raises:
        CampaignError: one is gone, unreadable or changed (named by label only: the path would unblind).
    """
    for p in manifest.policies:
        try:
            same = checkpoint_identity(Path(p.checkpoint)) == p.identity
        except CampaignError:
            same = None
        if not same:
            what = "is gone or unreadable" if same is None else "has changed (its content differs)"
            raise CampaignError(
                f"policy {p.label}'s checkpoint {what} since the campaign started; its episodes would mix two "
                "policies. Next: put that checkpoint back as it was and run the same command; its path is in "
                "campaign.json (reading it unblinds you)"
            )


def campaign_name(root: Path) -> str:
    """The campaign's name, usable in a LeRobot repo_id: the folder name with other characters as '_'."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", Path(root).expanduser().resolve().name) or "campaign"


def _root(config: CampaignCommandConfig) -> Path:
    if config.campaign.root is None:  # checked when the options are parsed
        raise ConfigError("campaign.root is required: pass --campaign.root=<folder>")
    return config.campaign.root.expanduser()


def _check_same(config: CampaignCommandConfig, manifest: Manifest, given: set[str]) -> None:
    c = config.campaign
    stored = {
        "--campaign.episodes_per_policy": (c.episodes_per_policy, manifest.episodes_per_policy),
        "--campaign.block": (c.block, manifest.block),
        "--campaign.stop_when_significant": (c.stop_when_significant, manifest.stop_when_significant),
        "--campaign.min_episodes_per_policy": (c.min_episodes_per_policy, manifest.min_episodes_per_policy),
        "--campaign.adjust_for_looks": (c.adjust_for_looks, manifest.adjust_for_looks),
        "--campaign.seed": (c.seed, manifest.seed),
        "--campaign.scorer": (c.scorer.value, manifest.scorer),
        "--rubric_path": (load_rubric(config.rubric_path).version, manifest.rubric),
    }
    differ = [name for name, (now, then) in stored.items() if name in given and now != then]
    max_given = manifest.rounds and "--campaign.max_episodes_per_policy" in given
    if max_given and c.planned_episodes() != sum(r.episodes(manifest.labels[0]) for r in manifest.rounds):
        differ.append("--campaign.max_episodes_per_policy")
    if "--policies" in given and {str(Path(p).expanduser().resolve()) for p in config.policies} != {
        p.checkpoint for p in manifest.policies
    }:
        differ.append("--policies")
    if differ:
        raise ConfigError(  # the options given contradict the campaign's own: nothing ran
            f"{manifest_path(_root(config))} already fixes the campaign, and {', '.join(differ)} differ(s) from it. "
            f"Next: resume with the same options (or without them): so101-campaign --campaign.root={_root(config)}"
            f"{_who(config)}; or start another campaign in a new folder"
        )


def _who(config: CampaignCommandConfig) -> str:
    """The resume command's scorer flags."""
    if config.campaign.scorer == CampaignScorer.TRUTH:
        return " --campaign.scorer=truth"
    return f" --live_scores.operator={config.live_scores.operator}"
