"""Filters of the episodes list, parsed from and written back to the query string."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlencode

from evaluation.errors import ConfigError

REVIEW_STATUSES = ("unreviewed", "partial", "reviewed")


@dataclass(frozen=True)
class EpisodeFilter:
    """Filters of the episodes list (from the query string); the episode page keeps them for j/k."""

    routed: bool = False  # only episodes routed for review (on `criterion` when set)
    audit: bool = False  # only the random audit sample
    tag: str = ""  # only episodes judged under this run tag (policy)
    criterion: str = ""  # one criterion: its column only, and `routed`/`status` apply to it
    status: str = ""  # "", or a review status: unreviewed, partial, reviewed

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
        on = ("1", "true", "on", "yes")
        return cls(query.get("routed", "") in on, query.get("audit", "") in on, query.get("tag", ""), criterion, status)

    def query_string(self) -> str:
        """The filters as a query string ("" when none)."""
        params = {
            "routed": "1" if self.routed else "", "audit": "1" if self.audit else "", "tag": self.tag,
            "criterion": self.criterion, "status": self.status,
        }  # fmt: skip
        return urlencode({k: v for k, v in params.items() if v})
