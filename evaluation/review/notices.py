"""One-line notices atop the review pages: what was left out because its episode changed or is gone.

The templates receive the notices as `notices`. A template that does not show them (no element with
id "notices") gets them inserted, escaped, right after `<body>`, so a stale judge result or override
is never left out without a word.
"""

from __future__ import annotations

import html
import shlex
from pathlib import Path

from evaluation.currency import describe_stale
from evaluation.episode_facts import EpisodeFacts
from evaluation.episode_source import DatasetSource
from evaluation.review.catalog import EpisodeSummary, StaleRecords
from evaluation.view_map import suggest

NOTICES_ID = "notices"  # id of the element that holds the notices


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def sidecar_notice(stale_sidecars: list[EpisodeFacts]) -> list[str]:
    """A notice naming the episodes whose quality facts in meta/so101/ belong to another episode."""
    if not stale_sidecars:
        return []
    named = "; ".join(f"#{f.index}: {f.sidecar.reason}" for f in stale_sidecars[:5])
    more = f" and {len(stale_sidecars) - 5} more" if len(stale_sidecars) > 5 else ""
    return [
        f"{_plural(len(stale_sidecars), 'quality card')} in meta/so101/ left out: the dataset was edited by another"
        f" tool since they were written, so they describe other episodes ({named}{more})"
    ]


def video_notices(source: DatasetSource) -> list[str]:
    """What the episode pages cannot show: video files not on disk, or cameras none of our views map."""
    if source.missing_videos:
        first = source.missing_videos[0].relative_to(source.root)
        return [
            f"{_plural(len(source.missing_videos), 'video file')} of the dataset are not on disk (first: {first}):"
            " episodes show their joint traces only"
        ]
    if source.cameras and not any(ep.views for ep in source.episodes):
        flag = suggest(set(source.cameras)).split(" ", 1)[0]
        return [
            f"none of the dataset's cameras ({', '.join(source.cameras)}) is one of our views: episodes show their"
            f" joint traces only. To see them, restart with {flag}"
        ]
    return []


def list_notices(
    stale: StaleRecords, dataset_root: Path, stale_sidecars: list[EpisodeFacts] | None = None
) -> list[str]:
    """Notices of the episodes page: stale results, overrides and quality cards left out, and what to do."""
    out = sidecar_notice(stale_sidecars or [])
    changed = [s for s in stale.results if not s.deleted]
    if stale.results:
        step = f"; judge them again: so101-judge {shlex.quote(f'--dataset.root={dataset_root}')}" if changed else ""
        out.append(
            f"{_plural(len(stale.results), 'stale judge result')} left out ({describe_stale(stale.results)}): "
            f"made before the episode was deleted or changed{step}"
        )
    if stale.overrides:
        episodes = ", ".join(f"#{i}" for i in sorted({o.episode_index for o in stale.overrides}))
        out.append(
            f"{_plural(len(stale.overrides), 'stale override')} not applied (episodes {episodes}): made on an earlier "
            f"version of the episode; open it and record the score again"
        )
    return out


def episode_notices(summary: EpisodeSummary, dataset_root: Path) -> list[str]:
    """Notices of an episode page: its stale quality card, judge result and each stale override."""
    out = sidecar_notice([summary.facts] if summary.facts.sidecar.status == "stale" else [])
    if summary.result is None and summary.stale_result is not None:
        out.append(
            f"judge result #{summary.stale_result.result.result_id} was made on an earlier version of this episode: "
            f"it is stale and not shown; judge it again: so101-judge --dataset.root={dataset_root} "
            f"--dataset.episodes=[{summary.index}]"
        )
    for criterion, effective in sorted(summary.effective.items()):
        for o in effective.stale:
            out.append(
                f"{criterion}: override #{o.override_id} by {o.reviewer} ({o.created_at}, score {o.new_score:g}) was "
                f"made on an earlier version of this episode; it is stale and not applied: record the score again"
            )
    return out


def insert_notices(page: str, notices: list[str]) -> str:
    """The page with the notices after `<body>`, unless there are none or the page shows them itself."""
    if not notices or f'id="{NOTICES_ID}"' in page:
        return page
    items = "".join(f'<p class="warn stale-notice">{html.escape(n)}</p>' for n in notices)
    block = f'\n<section class="notices" id="{NOTICES_ID}" role="status">{items}</section>'
    head, body_tag, tail = page.partition("<body>")
    return head + body_tag + block + tail if body_tag else block + page
