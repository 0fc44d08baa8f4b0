"""The campaign loop: each block as a so101-deploy call, then the manifest, the scores and the rule.

    plan (campaign.json) ──> next block not yet in its dataset ──> so101-deploy (foreground, blind label)
         ^                                                               │
         │                 episodes recorded <── policy_<label>/ <───────┘
         └── manifest updated ── after a whole round: scores ──> stopping rule ──> continue / stop
                                  (live: the operator's; truth: each card's, on the virtual rig)

Where the campaign stands is read from the datasets, not remembered: block i of label L is done when
L's dataset holds as many episodes as the plan gives L up to block i. So a campaign that stopped (a
failed deploy, a person's q or Ctrl-C, a crash between a block and the manifest update) resumes at
the first block not done, in the same order, and a block cut short runs only its missing episodes.
Progress messages name labels only, never a checkpoint, and show no score: an operator who saw
which label is ahead could no longer score blind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evaluation.campaign.deploy_call import BlockCall, DeployExit
from evaluation.campaign.manifest import Manifest, Status, write_manifest
from evaluation.campaign.order import Block, planned_through
from evaluation.campaign.readback import TRUTH, recorded_episodes, scored_totals
from evaluation.campaign.stopping import StoppingRule, planned_looks

DONE = "done: every planned episode"  # the outcome of a campaign that ran its whole plan


@dataclass(frozen=True)
class CampaignRun:
    """How this sitting ended."""

    manifest: Manifest  # as written last
    failed: DeployExit | None = None  # the block's deploy that failed, or ended by a signal; None otherwise
    paused: str = ""  # why the campaign stopped before its end without a failure (a block cut short), else ""

    @property
    def finished(self) -> bool:
        """Whether the campaign is over (plan done or rule stopped it)."""
        return self.manifest.status == Status.FINISHED


def run_campaign(
    root: Path, manifest: Manifest, operator: str, deploy: Callable[[BlockCall], DeployExit], say: Callable[[str], None]
) -> CampaignRun:
    """Run the blocks not yet done, looking at the rule after each whole round; blocks while deploy runs.

    `deploy` runs one block (run_deploy with the command's flags; tests give a double). `say` prints a line.
    """
    plan = [(i, b) for i, r in enumerate(manifest.rounds) for b in r.blocks]
    through = {label: planned_through(manifest.rounds, label) for label in manifest.labels}
    for k, (round_index, block) in enumerate(plan):
        dataset = manifest.dataset_root(root, block.label)
        missing = through[block.label][k] - recorded_episodes(dataset)
        if missing > 0:
            say(f"round {round_index + 1}/{len(manifest.rounds)}: policy {block.label}, {missing} episode(s)")
            result = deploy(_call(manifest, root, block, missing, operator))
            manifest = _save_progress(root, manifest)
            if result.code != 0 or result.signal is not None:
                return CampaignRun(manifest, failed=result)
            short = through[block.label][k] - recorded_episodes(dataset)
            if short > 0:
                return CampaignRun(manifest, paused=f"policy {block.label}'s block ended {short} episode(s) short")
            say(progress_line(root, manifest))
        if k + 1 == len(plan) or plan[k + 1][0] != round_index:
            manifest = _after_round(root, manifest, round_index, say)
            if manifest.status == Status.FINISHED:
                break
    return CampaignRun(manifest)


def progress_line(root: Path, manifest: Manifest) -> str:
    """Episodes recorded and scored per label, against the plan (no score, no checkpoint)."""
    parts = []
    for label in manifest.labels:
        dataset = manifest.dataset_root(root, label)
        planned = sum(r.episodes(label) for r in manifest.rounds)
        scored = len(scored_totals(dataset, manifest.criteria, manifest.scorer))
        parts.append(f"policy {label} {recorded_episodes(dataset)}/{planned} ({scored} scored)")
    return "progress: " + ", ".join(parts)


def stopping_rule(manifest: Manifest) -> StoppingRule:
    """The campaign's rule: looks planned from its rounds, intervals clipped to the total's scale."""
    looks = planned_looks(manifest.rounds, manifest.labels, manifest.min_episodes_per_policy)
    return StoppingRule(
        looks, manifest.min_episodes_per_policy, manifest.adjust_for_looks, (0.0, float(len(manifest.criteria)))
    )


def _call(manifest: Manifest, root: Path, block: Block, episodes: int, operator: str) -> BlockCall:
    return BlockCall(
        checkpoint=manifest.policy(block.label).checkpoint,
        label=block.label,
        dataset_root=manifest.dataset_root(root, block.label),
        repo_id=f"local/{manifest.name}_{manifest.policy(block.label).dataset}",
        episodes=episodes,
        operator=operator if manifest.scorer != TRUTH else "",
        criteria=manifest.criteria,
    )


def _save_progress(root: Path, manifest: Manifest) -> Manifest:
    done = {label: recorded_episodes(manifest.dataset_root(root, label)) for label in manifest.labels}
    manifest = manifest.with_progress(episodes_done=done)
    write_manifest(root, manifest)
    return manifest


def _after_round(root: Path, manifest: Manifest, round_index: int, say: Callable[[str], None]) -> Manifest:
    """Look at the rule after a whole round (once per round), or finish at the plan's end."""
    last = round_index + 1 == len(manifest.rounds)
    looked = any(x.get("round") == round_index for x in manifest.looks)
    if not manifest.stop_when_significant or looked:
        if last:
            manifest = manifest.with_progress(status=Status.FINISHED, outcome=DONE)
            write_manifest(root, manifest)
        return manifest
    first, second = (
        scored_totals(manifest.dataset_root(root, label), manifest.criteria, manifest.scorer)
        for label in manifest.labels
    )
    decision = stopping_rule(manifest).decide(first, second, at_maximum=last)
    look = {"round": round_index, "n": [len(first), len(second)], **decision.to_dict()}
    say(f"look after round {round_index + 1}: {decision.verdict.value} ({decision.reason})")
    finished = {"status": Status.FINISHED, "outcome": decision.verdict.value} if decision.verdict.stops else {}
    manifest = manifest.with_progress(looks=(*manifest.looks, look), **finished)
    write_manifest(root, manifest)
    return manifest
