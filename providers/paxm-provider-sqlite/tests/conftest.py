"""Core test fixtures.  Every test runs with HOME/XDG/PAXM_* pointed at a temp dir."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from paxm_contracttest.fakes import isolated_home, paxm_unset_env  # noqa: F401  (autouse: no test touches the real home)
from paxm_core import ProviderConfig
from paxm_provider_sqlite.provider import SQLiteProvider


@pytest.fixture
def provider(tmp_path: Path) -> Iterator[SQLiteProvider]:
    """A SQLite provider on a fresh file, closed after the test (a module may define its own)."""
    prov = SQLiteProvider("sqlite", ProviderConfig(path=str(tmp_path / "m.sqlite")))
    yield prov
    prov.close()
