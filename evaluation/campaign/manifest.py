"""campaign.json: what a campaign is, the order it planned, and how far it got, so a stopped one resumes.

    <campaign>/campaign.json     this manifest (written atomically: a reader never sees half of it)
    <campaign>/policy_A/         policy A's rollouts: a LeRobot dataset with the operator's live scores
    <campaign>/policy_B/         ...

The manifest holds the blind mapping: per label, its checkpoint path and content identity. Nothing
prints them while the campaign runs; so101-report reveals them. Opening campaign.json yourself
unblinds you.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from evaluation.campaign.errors import ManifestError
from evaluation.campaign.order import Block, Round

MANIFEST_FILE = "campaign.json"
FORMAT = "so101-campaign"  # the "format" field: tells our manifest from another tool's campaign.json
VERSION = 1  # bumped when a field changes meaning; a newer one is refused


class Status:
    """Where a campaign stands (the "status" field)."""

    RUNNING = "running"  # blocks remain (also after a deploy failed or a person stopped it: it resumes)
    FINISHED = "finished"  # the plan is done or the stopping rule ended it; `outcome` says which


@dataclass(frozen=True)
class CampaignPolicy:
    """One blind label and what it stands for (secret while the campaign runs)."""

    label: str  # "A"
    dataset: str  # the label's dataset folder inside the campaign folder, "policy_A"
    checkpoint: str  # the checkpoint folder's absolute path
    identity: str  # its content identity (evaluation/campaign/identity.py)


@dataclass(frozen=True)
class Manifest:
    """The whole of campaign.json."""

    name: str  # the campaign folder's name; part of each dataset's repo_id
    seed: int  # seed of the label assignment and the order
    rubric: str  # rubric version (name@hash) the operator scores against
    criteria: tuple[str, ...]  # its criterion ids; a total is their sum
    policies: tuple[CampaignPolicy, ...]  # in label order
    rounds: tuple[Round, ...]  # the planned order (evaluation/campaign/order.py)
    episodes_per_policy: int  # episodes each label gets when the stopping rule does not end it earlier
    block: int  # episodes per block (one so101-deploy call)
    stop_when_significant: bool  # the stopping rule is on
    min_episodes_per_policy: int  # scored episodes each label needs before the rule may stop
    adjust_for_looks: bool  # each look's interval is Bonferroni-split over the planned looks
    scorer: str = "live"  # who scores each rollout: "live" (the operator's keys) or "truth" (the virtual rig)
    status: str = Status.RUNNING
    outcome: str = ""  # when finished: the verdict ("stop: interval excludes 0", ...)
    episodes_done: Mapping[str, int] = field(default_factory=dict)  # label -> episodes in its dataset
    looks: tuple[Mapping[str, Any], ...] = ()  # per whole round looked at: {"round", "verdict", ...}

    @property
    def labels(self) -> tuple[str, ...]:
        """The blind labels, in order."""
        return tuple(p.label for p in self.policies)

    def policy(self, label: str) -> CampaignPolicy:
        """The entry of one label."""
        return next(p for p in self.policies if p.label == label)

    def dataset_root(self, root: Path, label: str) -> Path:
        """The dataset folder of one label."""
        return Path(root) / self.policy(label).dataset

    def with_progress(self, **changes: Any) -> Manifest:
        """A copy with progress fields changed (status, outcome, episodes_done, looks)."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the file."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "name": self.name,
            "seed": self.seed,
            "rubric": self.rubric,
            "criteria": list(self.criteria),
            "policies": [asdict(p) for p in self.policies],
            "rounds": [[[b.label, b.episodes] for b in r.blocks] for r in self.rounds],
            "episodes_per_policy": self.episodes_per_policy,
            "block": self.block,
            "stop_when_significant": self.stop_when_significant,
            "min_episodes_per_policy": self.min_episodes_per_policy,
            "adjust_for_looks": self.adjust_for_looks,
            "scorer": self.scorer,
            "status": self.status,
            "outcome": self.outcome,
            "episodes_done": dict(self.episodes_done),
            "looks": [dict(x) for x in self.looks],
        }


def manifest_path(root: Path) -> Path:
    """Where a campaign folder keeps its manifest."""
    return Path(root) / MANIFEST_FILE


def write_manifest(root: Path, manifest: Manifest) -> Path:
    """Write campaign.json atomically (a temporary file, flushed to disk, renamed over the old one).

    Raises:
        ManifestError: the folder cannot be written.
    """
    path = manifest_path(root)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tmp.open("w") as f:
            json.dump(manifest.to_dict(), f, indent=1, allow_nan=False)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        raise ManifestError(f"cannot write {path}: {e}. Next: free space or fix the folder's permissions") from e
    return path


def read_manifest(root: Path) -> Manifest:
    """Read campaign.json.

    Raises:
        ManifestError: missing, not JSON, another tool's file, a newer version, or a field missing or wrong.
    """
    path = manifest_path(root)
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError as e:
        raise ManifestError(f"{path} does not exist. Next: start the campaign with --policies=[<a>,<b>]") from e
    except (OSError, ValueError) as e:
        raise ManifestError(_corrupt(path, f"{type(e).__name__}: {e}")) from e
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise ManifestError(
            f'{path} is not a so101-campaign manifest (no "format": "{FORMAT}"). Next: pass another '
            "--campaign.root (a new folder starts a new campaign)"
        )
    if not isinstance(raw.get("version"), int) or raw["version"] > VERSION:
        raise ManifestError(
            f"{path} has version {raw.get('version')!r}; this so101-campaign reads up to {VERSION}. Next: update "
            "so101-bimanual (pip install -U ...) and run the same command"
        )
    try:
        return _parse(raw)
    except (KeyError, TypeError, ValueError) as e:
        raise ManifestError(_corrupt(path, f"{type(e).__name__}: {e}")) from e


def _parse(raw: dict[str, Any]) -> Manifest:
    policies = tuple(
        CampaignPolicy(str(p["label"]), str(p["dataset"]), str(p["checkpoint"]), str(p["identity"]))
        for p in raw["policies"]
    )
    rounds = tuple(Round(tuple(Block(str(label), int(n)) for label, n in r)) for r in raw["rounds"])
    labels = {p.label for p in policies}
    if len(policies) < 1 or {b.label for r in rounds for b in r.blocks} - labels:
        raise ValueError("the planned order names labels that are not among the policies")
    return Manifest(
        name=str(raw["name"]),
        seed=int(raw["seed"]),
        rubric=str(raw["rubric"]),
        criteria=tuple(str(c) for c in raw["criteria"]),
        policies=policies,
        rounds=rounds,
        episodes_per_policy=int(raw["episodes_per_policy"]),
        block=int(raw["block"]),
        stop_when_significant=bool(raw["stop_when_significant"]),
        min_episodes_per_policy=int(raw["min_episodes_per_policy"]),
        adjust_for_looks=bool(raw["adjust_for_looks"]),
        scorer=str(raw.get("scorer", "live")),  # campaigns before truth scoring were all live
        status=str(raw["status"]),
        outcome=str(raw.get("outcome", "")),
        episodes_done={str(k): int(v) for k, v in dict(raw.get("episodes_done", {})).items()},
        looks=tuple(dict(x) for x in raw.get("looks", [])),
    )


def _corrupt(path: Path, why: str) -> str:
    return (
        f"{path} is corrupt ({why}). Next: restore it from a copy; the episodes in its policy_* folders are kept. "
        "Or start a new campaign in another --campaign.root"
    )
