"""Which judge results and overrides are current: made on the episode as it is now.

Every judge result records the fingerprint of the episode it scored (`DatasetSource.fingerprint`:
the episode's index, length, task, video offsets, state and action), and every override records the
fingerprint of the episode the reviewer saw (review schema 2; older overrides are bound through the
judge result they overrode, see overrides_schema). A record is current when its episode is in the
dataset now with that fingerprint; otherwise it is stale (the episode was deleted, re-recorded,
renumbered by an edit, or belongs to another dataset with the same name) and is never counted.

What an episode is "now" comes from one of two places:

    the dataset on disk  --episodes_now-->       {index: fingerprint}   (review page; reports that find it)
    the store's records  --episodes_on_record--> {index: newest fingerprint recorded for it}

The second is what the judge last saw: it catches a re-recorded episode that was judged again, but
not a deletion, so a report that cannot open the dataset says its results were not checked against it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from evaluation.episode_source import DatasetSource
from evaluation.store import EvaluationStore


@dataclass(frozen=True)
class ResultRef:
    """A scored judge result, as far as currency is concerned."""

    result_id: int  # episode_results.id (higher is newer)
    episode_index: int  # episode it scored
    fingerprint: str  # fingerprint of the episode it scored


@dataclass(frozen=True)
class StaleResult:
    """The newest scored result of an episode that has no current one."""

    result: ResultRef  # the stale result
    deleted: bool  # True: no episode with this index now; False: the episode's content changed


@dataclass(frozen=True)
class CurrentResults:
    """Per episode, the newest scored result made on the episode as it is now, and those left out."""

    current: Mapping[int, ResultRef]  # episode index -> its newest current result
    stale: tuple[StaleResult, ...]  # one per episode with scored results but none current, by episode index


def episodes_now(source: DatasetSource) -> dict[int, str]:
    """Fingerprint of every episode of an opened dataset (reads each episode's state and action once).

    Raises:
        DatasetReadError: An episode's data cannot be read.
    """
    return {ep.index: source.fingerprint(ep) for ep in source.episodes}


def episodes_on_record(store: EvaluationStore, dataset_id: str) -> dict[int, str]:
    """Per episode, the newest fingerprint the store recorded for it (judge results of any status, else overrides)."""
    now: dict[int, str] = {}
    for r in store.query(
        "SELECT episode_index, episode_fingerprint FROM episode_results WHERE dataset_id = ? ORDER BY id",
        (dataset_id,),
    ):
        now[int(r["episode_index"])] = r["episode_fingerprint"]
    judged = set(now)
    if store.query("SELECT 1 FROM pragma_table_info('overrides') WHERE name = 'episode_fingerprint'"):
        for r in store.query(
            "SELECT episode_index, episode_fingerprint FROM overrides"
            " WHERE dataset_id = ? AND episode_fingerprint IS NOT NULL ORDER BY override_id",
            (dataset_id,),
        ):
            if int(r["episode_index"]) not in judged:  # an episode scored by hand only: its newest override
                now[int(r["episode_index"])] = r["episode_fingerprint"]
    return now


def select_current(results: Iterable[ResultRef], now: Mapping[int, str]) -> CurrentResults:
    """The newest current result per episode, and for episodes without one their newest (stale) result."""
    newest: dict[int, ResultRef] = {}
    current: dict[int, ResultRef] = {}
    for r in results:
        if r.episode_index not in newest or r.result_id > newest[r.episode_index].result_id:
            newest[r.episode_index] = r
        if now.get(r.episode_index) == r.fingerprint:
            held = current.get(r.episode_index)
            if held is None or r.result_id > held.result_id:
                current[r.episode_index] = r
    stale = tuple(
        StaleResult(r, deleted=r.episode_index not in now) for i, r in sorted(newest.items()) if i not in current
    )
    return CurrentResults(current, stale)


def describe_stale(stale: Iterable[StaleResult]) -> str:
    """The episodes of stale results in words, e.g. "#2 deleted, #4 changed"."""
    return ", ".join(
        f"#{s.result.episode_index} {'deleted' if s.deleted else 'changed'}"
        for s in sorted(stale, key=lambda s: s.result.episode_index)
    )
