"""The review app served for a test: over a dataset and a store, on a free loopback port."""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from evaluation.episode_source import open_dataset
from evaluation.overrides import OverrideStore
from evaluation.review.app import ReviewSettings, create_app
from evaluation.review.catalog import ReviewCatalog
from evaluation.review.config import AuditConfig
from evaluation.review.server import ReviewServer
from evaluation.store import EvaluationStore


@contextmanager
def serving(
    dataset_root: Path, store_path: Path, *, reviewer: str = "tester", token: str = "", audit: AuditConfig | None = None
) -> Iterator[ReviewServer]:
    """The review app over a dataset and store, served on 127.0.0.1 (free port) in a thread."""
    source = open_dataset(dataset_root)
    with EvaluationStore(store_path) as store, OverrideStore(store) as overrides:
        catalog = ReviewCatalog(source, store, audit or AuditConfig())
        app = create_app(
            catalog, overrides, ReviewSettings(reviewer=reviewer, access_token=token, check_host=not token)
        )
        with ReviewServer(app, "127.0.0.1", 0) as server:
            yield server
