"""The reveal of a blind so101-campaign: which checkpoint each label was, and the difference in mean total.

From the campaign folder's campaign.json and each label's scores (the operator's live ones, or the
virtual rig's truth in a campaign it scores; summed over the rubric's criteria per episode): per
label, its checkpoint, content identity, episodes recorded and the mean total with a 95 %
t-interval; per pair of labels, the difference in mean total with a 95 % Welch interval, clipped
to the possible range (evaluation/report/stats.py, as the report's own comparisons). After an
early stop by the campaign's rule this is the plain 95 % interval: it does not account for the
looks, and the difference tends to be a little overstated (a campaign stops when the noise points
the way of the effect).

`so101-report --campaign.root=<folder>` prints it and writes campaign_reveal.json into the report folder;
with `--datasets=[<campaign>/policy_A,...]` (judged datasets of one campaign) it comes beside the report.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evaluation.campaign.manifest import MANIFEST_FILE, read_manifest
from evaluation.campaign.readback import TRUTH, recorded_episodes, scored_totals
from evaluation.campaign.stopping import Verdict
from evaluation.report.errors import ReportError
from evaluation.report.stats import Estimate, mean_t_interval, welch_difference
from evaluation.report.tables import fmt_estimate
from evaluation.vocabulary import TRUTH_LABEL

REVEAL_FILE = "campaign_reveal.json"  # in the report folder (not campaign.json: that name is the manifest's)


@dataclass(frozen=True)
class RevealedPolicy:
    """One label, unblinded."""

    label: str  # "A"
    checkpoint: str  # the checkpoint folder it stood for
    identity: str  # that folder's content identity when the campaign started
    episodes: int  # episodes recorded
    total: Estimate  # mean total of the scored episodes, 95 % t-interval


@dataclass(frozen=True)
class CampaignReveal:
    """The campaign's mapping and its comparison."""

    name: str  # campaign name
    outcome: str  # how it ended ("" while it runs)
    criteria: tuple[str, ...]  # the total is their sum
    policies: tuple[RevealedPolicy, ...]  # in label order
    differences: tuple[tuple[str, str, Estimate], ...]  # (first, second, first − second with a Welch interval)
    scorer: str = "live"  # who scored the rollouts: "live" (the operator) or "truth" (the virtual rig)

    @property
    def scored_by(self) -> str:
        """Who scored, in words."""
        return TRUTH_LABEL if self.scorer == TRUTH else "the operator, live"

    def lines(self) -> list[str]:
        """The reveal in words, one line each."""
        out = [
            f"campaign {self.name} ({self.outcome or 'not finished'}), total = {' + '.join(self.criteria)}, "
            f"scored by {self.scored_by}:"
        ]
        out += [
            f"  policy {p.label} = {p.checkpoint} ({p.identity[:19]}): {p.episodes} episodes, "
            f"mean total {fmt_estimate(p.total)} (n={p.total.n} scored)"
            for p in self.policies
        ]
        out += [f"  policy {a} − policy {b}: {fmt_estimate(d)} (95 % Welch)" for a, b, d in self.differences]
        if self.outcome == Verdict.SIGNIFICANT.value:
            out.append(
                "  note: the stopping rule ended it early; this plain 95 % interval ignores its looks, and the "
                "difference is likely a little overstated"
            )
        return out

    def to_dict(self) -> dict[str, object]:
        """Plain data for campaign_reveal.json in the report folder."""
        return {
            "name": self.name,
            "outcome": self.outcome,
            "criteria": list(self.criteria),
            "scored_by": self.scored_by,
            "policies": [
                {
                    "label": p.label,
                    "checkpoint": p.checkpoint,
                    "identity": p.identity,
                    "episodes": p.episodes,
                    "total": p.total.to_dict(),
                }
                for p in self.policies
            ],
            "differences": [{"first": a, "second": b, "difference": d.to_dict()} for a, b, d in self.differences],
        }


def campaign_root(root: Path | None, datasets: Sequence[Path]) -> Path | None:
    """The campaign to reveal: `root` (--campaign.root), else the folder holding every dataset if it is a campaign's."""
    if root is not None:
        return root.expanduser()
    parents = {Path(d).expanduser().resolve().parent for d in datasets}
    if len(parents) == 1 and (only := parents.pop()).joinpath(MANIFEST_FILE).is_file():
        return only
    return None


def reveal_campaign(root: Path) -> CampaignReveal:
    """Unblind a campaign folder.

    Raises:
        ManifestError: campaign.json is missing or unreadable (the message says what to do).
    """
    manifest = read_manifest(root)
    bounds = (0.0, float(len(manifest.criteria)))
    totals = {p.label: scored_totals(root / p.dataset, manifest.criteria, manifest.scorer) for p in manifest.policies}
    policies = tuple(
        RevealedPolicy(
            p.label,
            p.checkpoint,
            p.identity,
            recorded_episodes(root / p.dataset),
            mean_t_interval(totals[p.label], bounds=bounds),
        )
        for p in manifest.policies
    )
    labels = manifest.labels
    differences = tuple(
        (a, b, welch_difference(totals[a], totals[b], bounds=bounds))
        for i, a in enumerate(labels)
        for b in labels[i + 1 :]
    )
    return CampaignReveal(manifest.name, manifest.outcome, manifest.criteria, policies, differences, manifest.scorer)


def write_reveal(reveal: CampaignReveal, out_dir: Path) -> Path:
    """Write campaign_reveal.json into the report folder (atomically); returns its path.

    Raises:
        ReportError: the folder cannot be written.
    """
    path = out_dir / REVEAL_FILE
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(reveal.to_dict(), indent=2, ensure_ascii=False, allow_nan=False))
        os.replace(tmp, path)
    except OSError as e:
        raise ReportError(f"cannot write {path}: {e}; pass another --output_dir") from e
    return path
