"""What a campaign reads back from a policy's dataset: how many episodes it holds, and their live scores.

    <dataset>/meta/info.json                                   LeRobot's "total_episodes"
    <dataset>/meta/so101/live_scores/episode-000003.json       the operator's scores (teleop/dataset/live_scores.py)

`scored_totals` is the one place the campaign turns live scores into numbers: if the live-score files
change shape, only it changes. A live-score file that does not read is left out with a warning by
`read_live_scores` (that episode counts as unscored), so one bad file does not stop a campaign.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from evaluation.campaign.errors import CampaignError
from teleop.dataset.live_scores import read_live_scores


def scored_totals(root: Path, criteria: Sequence[str]) -> list[float]:
    """Per scored episode, by episode index, the total over `criteria` (skipped or incomplete episodes left out)."""
    totals = []
    for score in read_live_scores(Path(root)):
        if not score.skipped and all(c in score.scores for c in criteria):
            totals.append(float(sum(score.scores[c] for c in criteria)))
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
