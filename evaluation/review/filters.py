"""Filters of the episodes list, parsed from and written back to the query string."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlencode

from evaluation.errors import ConfigError

REVIEW_STATUSES = ("unreviewed", "partial", "reviewed")
SCORED = ("yes", "no")  # has a current judge result, or not
VERDICTS = ("keep", "keep (marked)", "no card")  # the quality card's verdict; "no card": none kept, or stale


@dataclass(frozen=True)
class EpisodeFilter:
    """Filters of the episodes list (from the query string); the episode page keeps them for j/k."""

    routed: bool = False  # only episodes routed for review (on `criterion` when set)
    audit: bool = False  # only the random audit sample
    tag: str = ""  # only episodes judged under this run tag (policy)
    criterion: str = ""  # one criterion: its column only, and `routed`/`status` apply to it
    status: str = ""  # "", or a review status: unreviewed, partial, reviewed
    scored: str = ""  # "", or SCORED: only episodes with (or without) a current judge result
    verdict: str = ""  # "", or one of VERDICTS
    dropped: bool = False  # only episodes whose card counts lost camera frames
    min_idle_percent: float | None = None  # only episodes idle at least this share of their frames, %

    @classmethod
    def from_query(cls, query: Mapping[str, str], criteria: Iterable[str]) -> EpisodeFilter:
        """Parse and validate query parameters.

        Raises:
            ConfigError: An unknown criterion or review status.
        """
        criterion = query.get("criterion", "")
        known = list(criteria)
        if criterion and criterion not in known:
            raise ConfigError(f"criterion={criterion!r}; allowed: {known}")
        status = query.get("status", "")
        if status and status not in REVIEW_STATUSES:
            raise ConfigError(f"status={status!r}; allowed: {list(REVIEW_STATUSES)}")
        scored, verdict = query.get("scored", ""), query.get("verdict", "")
        if scored and scored not in SCORED:
            raise ConfigError(f"scored={scored!r}; allowed: {list(SCORED)}")
        if verdict and verdict not in VERDICTS:
            raise ConfigError(f"verdict={verdict!r}; allowed: {list(VERDICTS)}")
        on = ("1", "true", "on", "yes")
        return cls(
            query.get("routed", "") in on,
            query.get("audit", "") in on,
            query.get("tag", ""),
            criterion,
            status,
            scored,
            verdict,
            query.get("dropped", "") in on,
            _percent(query.get("min_idle", "")),
        )

    def query_string(self) -> str:
        """The filters as a query string ("" when none)."""
        params = {
            "routed": "1" if self.routed else "",
            "audit": "1" if self.audit else "",
            "tag": self.tag,
            "criterion": self.criterion,
            "status": self.status,
            "scored": self.scored,
            "verdict": self.verdict,
            "dropped": "1" if self.dropped else "",
            "min_idle": "" if self.min_idle_percent is None else f"{self.min_idle_percent:g}",
        }
        return urlencode({k: v for k, v in params.items() if v})


def _percent(raw: str) -> float | None:
    """A percentage from the query string ("" for none).

    Raises:
        ConfigError: not a number from 0 to 100.
    """
    if not raw.strip():
        return None
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0.0 <= value <= 100.0:  # NaN fails this too
        raise ConfigError(f"min_idle={raw!r}: a percentage from 0 to 100")
    return value
