"""A dataset opened for review: its source, store and catalog, as so101-review and so101-studio both serve it.

Opening carries the scores of a curated dataset's whole episodes over from its sources' stores and
records the scores an operator typed during the rollouts (live scores) as human labels, then opens
the store and the override store for the app:

    with opened_review(root, say=print) as review:
        app = create_app(review.catalog, review.overrides, settings)
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from evaluation.carry import carry_scores
from evaluation.episode_source import DatasetSource, open_dataset
from evaluation.errors import ConfigError
from evaluation.live_labels import import_live_scores
from evaluation.overrides import OverrideStore
from evaluation.review.catalog import ReviewCatalog
from evaluation.review.config import AuditConfig
from evaluation.store import EvaluationStore, default_store_path
from evaluation.view_map import view_map


@dataclass(frozen=True)
class OpenedReview:
    """What the review app serves: the dataset, its store's path, the catalog and the override store."""

    source: DatasetSource
    store_path: Path
    catalog: ReviewCatalog
    overrides: OverrideStore


@contextmanager
def opened_review(
    root: Path,
    *,
    say: Callable[[str], None],
    dataset_id: str | None = None,
    views: str = "",
    store_path: Path | None = None,
    audit: AuditConfig | None = None,
) -> Iterator[OpenedReview]:
    """Open a dataset and its store for the review app; `say` gets the lines a person should read.

    Raises:
        ConfigError: `store_path` was given and holds no store (a typo must not start an empty one).
        UnreadableDatasetError: the dataset cannot be opened (one line, with the next step).
    """
    source = open_dataset(root, dataset_id, view_map(views))
    path = store_path or default_store_path(source.root)
    if store_path is not None and not path.is_file():
        judge = shlex.join(["so101-judge", f"--dataset.root={root}", f"--store_path={path}"])
        raise ConfigError(
            f"no evaluation store at {path}: check the path, judge the dataset into it first ({judge}), "
            f"or leave --store_path out to use the store beside the dataset"
        )
    for line in carry_scores(source, path).lines():
        say(line)
    if not path.is_file():
        say(
            f"no evaluation store beside the dataset yet: starting one at {path} for the scores you give "
            f"(judge the episodes with {shlex.join(['so101-judge', f'--dataset.root={root}'])})"
        )
    for line in import_live_scores(source, path).lines():  # the operator's scores typed during the rollout
        say(line)
    with EvaluationStore(path) as store, OverrideStore(store) as overrides:
        yield OpenedReview(source, path, ReviewCatalog(source, store, audit or AuditConfig()), overrides)
