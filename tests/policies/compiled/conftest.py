"""One compiled-graph cache for the session: each checkpoint's graphs are exported once per configuration.

The product's cache is keyed by the checkpoint's content (`policies.compiled.cache`), so tests that
only run graphs share it safely; a test of the cache itself asks for `private_cache` instead.
"""

from pathlib import Path

import pytest

from policies.compiled.cache import CACHE_ENV


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("compiled")


@pytest.fixture(autouse=True)
def cache_root(shared_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CACHE_ENV, str(shared_cache))
    return shared_cache


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache of this test's own (its builds are counted, damaged or interrupted)."""
    root = tmp_path / "compiled"
    monkeypatch.setenv(CACHE_ENV, str(root))
    return root
