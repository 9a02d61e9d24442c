"""Dashboard fixtures; helpers live in ``_helpers.py`` (importable as ``_dashboard_helpers``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._kit import load_module

helpers = load_module("_dashboard_helpers", Path(__file__).with_name("_helpers.py"), register=True)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> helpers.Store:
    """Generated activity shared by a module's tests (read-only tests only)."""
    return helpers.generate_activity(tmp_path_factory.mktemp("dash") / "cfg")


@pytest.fixture(scope="module")
def dashboard(store: helpers.Store) -> Iterator[helpers.Dashboard]:
    """A dashboard over :func:`store` (module-scoped; tests that change the queue use their own)."""
    server = helpers.start_dashboard(store.config)
    yield server
    helpers.stop_dashboard(server)
