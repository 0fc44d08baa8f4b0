"""What a campaign reads back from a policy's dataset: how many episodes it holds, and their scores.

    <dataset>/meta/info.json                                   LeRobot's "total_episodes"
    <dataset>/meta/so101/live_scores/episode-000003.json       the operator's scores (teleop/dataset/live_scores.py)
    <dataset>/meta/so101/episodes/episode-000003/quality.json  its "truth" on the virtual rig (evaluation/truth.py)

`scored_totals` is the one place the campaign turns scores into numbers: if the live-score files or
the cards change shape, only it changes. A live-score file that does not read is left out with a warning by
`read_live_scores` (that episode counts as unscored), so one bad file does not stop a campaign.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from evaluation.campaign.errors import CampaignError
from evaluation.errors import TruthError
from evaluation.truth import card_truth
from teleop.dataset.live_scores import read_live_scores
from teleop.dataset.sidecar import QUALITY_FILE, SIDECAR_DIR

TRUTH = "truth"  # the manifest's scorer whose totals come from the cards' truth (CampaignScorer.TRUTH)


def scored_totals(root: Path, criteria: Sequence[str], scorer: str = "live") -> list[float]:
    """Per scored episode, by episode index, the total over `criteria` (skipped or incomplete episodes left out).

    `scorer` "truth": the virtual rig's ground truth in each episode's card (continuous, 0..len(criteria)).
    """
    if scorer == TRUTH:
        return _truth_totals(Path(root), criteria)
    totals = []
    for score in read_live_scores(Path(root)):
        if not score.skipped and all(c in score.scores for c in criteria):
            totals.append(float(sum(score.scores[c] for c in criteria)))
    return totals


def _truth_totals(root: Path, criteria: Sequence[str]) -> list[float]:
    totals = []
    for card in sorted((root / SIDECAR_DIR).glob(f"episode-*/{QUALITY_FILE}")):
        try:
            truth = card_truth(json.loads(card.read_text()))
        except (OSError, ValueError, TruthError) as e:
            raise CampaignError(
                f"{card} is unreadable ({type(e).__name__}: {e}), so its rollout has no score. Next: "
                f"so101-review --dataset.root={root} shows what is wrong"
            ) from e
        if truth is not None and all(c in truth.scores for c in criteria):
            totals.append(float(sum(truth.scores[c] for c in criteria)))
    return totals


def recorded_episodes(root: Path) -> int:
    """Episodes saved in a dataset folder (LeRobot's meta/info.json); 0 when there is no dataset yet.

    Raises:
        CampaignError: meta/info.json exists but is unreadable.
    """
    info = Path(root) / "meta" / "info.json"
    if not info.exists():
        return 0
    try:
        return int(json.loads(info.read_text())["total_episodes"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise CampaignError(
            f"{info} is unreadable ({type(e).__name__}: {e}), so the campaign cannot tell how many episodes "
            f"{Path(root).name} holds. Next: so101-review --dataset.root={root} shows what is wrong"
        ) from e
